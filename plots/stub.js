function (version, file, cfg, option) {
  "use strict";
  /*
   * convexnn/plots loader stub: a snippet whose page has the chart loader
   * already (an earlier output carries it) calls it; otherwise it loads the
   * loader's copy next to the page (plots.WriteBeside), file in cfg.beside,
   * once for all the stubs that wait for it. This file is embedded in Go; it
   * must not contain a closing script tag.
   */
  var R = window.__convexnnLoaders;
  if (R && typeof R[version] === "function") {
    R[version](cfg, option);
    return;
  }
  var Q = window.__convexnnLoaderQueue = window.__convexnnLoaderQueue || {};
  if (Q[version]) {
    Q[version].push([cfg, option]);
    return;
  }
  var queue = Q[version] = [[cfg, option]];
  /* @shared */
  var url = besideDir(cfg.beside) + file;

  function flush(load) {
    delete Q[version];
    for (var i = 0; i < queue.length; i++) {
      load(queue[i][0], queue[i][1]);
    }
  }
  function fail(msg) {
    delete Q[version];
    queue.forEach(function (call) {
      showError(call[0].id, msg + (document.querySelector("#" + call[0].id + " img.convexnn-static") ?
        "; below is a static view instead" : ""));
    });
  }
  /* An output that carries the loader may still come (outputs re-run out of
   * order): wait for it a while before failing. */
  function wait(why) {
    var tries = 0;
    (function poll() {
      var r = window.__convexnnLoaders;
      if (r && typeof r[version] === "function") {
        flush(r[version]);
      } else if (++tries > 100) {
        fail("the chart loader is not on this page and " + why + ": run the cell of the notebook's first chart " +
          "again, or keep the folder " + cfg.beside + " next to the notebook (or the exported page)");
      } else {
        setTimeout(poll, 100);
      }
    })();
  }
  var s = document.createElement("script");
  s.async = false;
  s.onload = function () {
    var r = window.__convexnnLoaders;
    if (r && typeof r[version] === "function") {
      flush(r[version]);
    } else {
      wait("its copy " + url + " did not register it");
    }
  };
  s.onerror = function () {
    wait("its copy " + url + " could not be loaded");
  };
  s.src = url;
  (document.head || document.documentElement).appendChild(s);
}
