function load(cfg, option) {
  "use strict";
  /*
   * convexnn/plots chart loader. Every snippet carries a copy; all copies on
   * a page share window.__convexnnECharts, which maps a library name
   * ("echarts", "echarts-gl") to the one promise that loads it and resolves
   * to the echarts namespace. cfg is
   *   {id, kind: "2d"|"3d", mode: "embed"|"url"|"omit", payload, urls, beside}.
   * A library that is neither in payload nor (mode "url") at urls comes from
   * an earlier output of the page, or from the folder cfg.beside next to the
   * page (next to the notebook in the classic Notebook). The loader registers
   * itself under cfg.version in window.__convexnnLoaders, where the snippets
   * that do not carry it (stub.js) find it.
   * This file is embedded in Go; it must not contain a closing script tag.
   */
  var PREFIX = "convexnn/plots: ";
  var R = window.__convexnnLoaders = window.__convexnnLoaders || {};
  if (cfg.version && typeof R[cfg.version] !== "function") {
    R[cfg.version] = load;
  }
  var G = window.__convexnnECharts;
  if (!G || typeof G !== "object") {
    G = {};
    window.__convexnnECharts = G;
  }

  function message(e) {
    return e && e.message ? e.message : String(e);
  }

  /* Classic Jupyter runs the scripts of an HTML output before it attaches
   * the output to the page, so the chart element may appear a little later. */
  function whenAttached(cb) {
    var tries = 0;
    (function poll() {
      var el = document.getElementById(cfg.id);
      if (el) {
        cb(el);
      } else if (++tries <= 600) {
        /* Often a moment: look again soon at first (a live update is
         * waiting for it), then every 50 ms. */
        setTimeout(poll, tries <= 20 ? 5 : 50);
      } else {
        console.error(PREFIX + "chart element #" + cfg.id + " never appeared on the page");
      }
    })();
  }

  function fail(msg) {
    showError(cfg.id, msg);
  }

  function globalECharts() {
    var ec = window.echarts;
    return ec && typeof ec.init === "function" ? ec : null;
  }

  function hasGL() {
    return !!window["echarts-gl"];
  }

  /* RequireJS as in classic Jupyter: a UMD bundle loaded by a plain script
   * tag would register as an anonymous AMD module there instead of setting
   * window.echarts. */
  function amdRequire() {
    var r = window.require;
    var d = window.define;
    if (typeof r === "function" && typeof r.config === "function" && typeof d === "function" && d.amd) {
      return r;
    }
    return null;
  }

  function stripJS(url) {
    return url.replace(/\.js$/, "");
  }

  function viaRequire(r, name, urls) {
    return new Promise(function (resolve, reject) {
      try {
        r.config({ paths: { "echarts": stripJS(urls["echarts"]), "echarts-gl": stripJS(urls["echarts-gl"]) } });
        r([name], resolve, function (err) {
          try {
            var rj = window.requirejs || r;
            if (typeof rj.undef === "function") {
              rj.undef(name);
            }
          } catch (e) {
            /* ignore */
          }
          reject(err || new Error("require failed"));
        });
      } catch (e) {
        reject(e);
      }
    });
  }

  /* Loads url with a script tag, hiding an AMD define while it runs so the
   * UMD bundle sets its global. */
  function viaScriptTag(url) {
    return new Promise(function (resolve, reject) {
      var s = document.createElement("script");
      var d = window.define;
      var hidden = false;
      if (d && d.amd) {
        try {
          window.define = undefined;
          hidden = true;
        } catch (e) {
          /* ignore */
        }
      }
      function restore() {
        if (hidden && window.define === undefined) {
          window.define = d;
        }
      }
      s.async = false;
      s.onload = function () {
        restore();
        resolve();
      };
      s.onerror = function () {
        restore();
        reject(new Error("network error"));
      };
      s.src = url;
      (document.head || document.documentElement).appendChild(s);
    });
  }

  /* Decodes a payload: the length of the gzip stream, a colon, and the stream
   * in Z85 (padded to a multiple of four bytes). */
  function decode(payload) {
    if (typeof DecompressionStream !== "function") {
      return Promise.reject(new Error("this browser has no DecompressionStream " +
        "(it needs Chrome 80, Firefox 113, Safari 16.4 or newer)"));
    }
    try {
      var colon = payload.indexOf(":");
      var n = parseInt(payload.slice(0, colon), 10);
      var text = payload.slice(colon + 1);
      // (split where a slash meets a star: minifyJS would see a comment)
      var A = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/" + "*?&<>()[]{}@%$#";
      var digit = new Int16Array(128).fill(-1);
      for (var k = 0; k < A.length; k++) {
        digit[A.charCodeAt(k)] = k;
      }
      if (!(n >= 0) || text.length % 5 !== 0 || text.length / 5 * 4 < n) {
        throw new Error("malformed payload");
      }
      var bytes = new Uint8Array(text.length / 5 * 4);
      for (var i = 0, j = 0; i < text.length; i += 5, j += 4) {
        var v = 0;
        for (var m = 0; m < 5; m++) {
          var c = text.charCodeAt(i + m);
          var d = c < 128 ? digit[c] : -1;
          if (d < 0) {
            throw new Error("malformed payload");
          }
          v = v * 85 + d;
        }
        bytes[j] = v >>> 24 & 255;
        bytes[j + 1] = v >>> 16 & 255;
        bytes[j + 2] = v >>> 8 & 255;
        bytes[j + 3] = v & 255;
      }
      var stream = new Blob([bytes.subarray(0, n)]).stream().pipeThrough(new DecompressionStream("gzip"));
      return new Response(stream).text();
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /* Runs a UMD bundle with define, module and exports shadowed, so that it
   * sets its browser global even when RequireJS is on the page. */
  function evaluate(src) {
    var s = document.createElement("script");
    s.text = "(function (define, module, exports) {\n" + src + "\n}).call(window);";
    var parent = document.head || document.documentElement;
    parent.appendChild(s);
    parent.removeChild(s);
  }

  function check(name, ec) {
    if (name === "echarts") {
      return globalECharts();
    }
    return hasGL() ? ec || globalECharts() : null;
  }

  function loadEmbedded(name, ec) {
    var b64 = cfg.payload && cfg.payload[name];
    if (!b64) {
      return Promise.reject(new Error(name + " is not embedded in this output"));
    }
    return decode(b64).then(function (src) {
      if (name === "echarts-gl" && ec && !globalECharts()) {
        window.echarts = ec;
      }
      evaluate(src);
      var got = check(name, ec);
      if (!got) {
        throw new Error("the embedded " + name + ".min.js did not run (see the errors above in the console)");
      }
      return got;
    }, function (e) {
      throw new Error("the embedded " + name + ".min.js could not be decoded: " + message(e));
    });
  }

  /* Loads the library from urls[name]; offline is the error when that fails. */
  function loadURL(name, ec, urls, offline) {
    var url = urls[name];
    function tag() {
      if (name === "echarts-gl" && ec && !globalECharts()) {
        window.echarts = ec;
      }
      return viaScriptTag(url).then(function () {
        var got = check(name, ec);
        if (!got) {
          throw new Error(name + " loaded from " + url + " but did not register itself");
        }
        return got;
      }, function () {
        throw new Error(offline);
      });
    }
    var r = amdRequire();
    if (r && (name === "echarts" || G.amd)) {
      return viaRequire(r, name, urls).then(function (mod) {
        if (name === "echarts") {
          if (!mod || typeof mod.init !== "function") {
            throw new Error("require('echarts') did not return echarts");
          }
          G.amd = true;
          return mod;
        }
        return ec;
      }).catch(function (e) {
        console.warn(PREFIX + "RequireJS could not load " + name + " (" + message(e) + "); trying a script tag");
        return tag();
      });
    }
    return tag();
  }

  /* @shared */

  function besideURLs() {
    var dir = besideDir(cfg.beside);
    return { "echarts": dir + "echarts.min.js", "echarts-gl": dir + "echarts-gl.min.js" };
  }

  /* A library left out of this output: an earlier output of the page has it
   * (or will), or the copy next to the page does. */
  function fromElsewhere(name) {
    if (!cfg.beside) {
      return waitLoaded(name, null);
    }
    G.beside = G.beside || {};
    var b = G.beside[name];
    if (!b) {
      var urls = besideURLs();
      var depFailed = false;
      var dep = (name === "echarts-gl" ? need("echarts") : Promise.resolve(null)).catch(function (e) {
        depFailed = true;
        throw e;
      });
      b = dep.then(function (ec) {
        var p = G[name];
        if (p && typeof p.then === "function") {
          return p;
        }
        var got = check(name, ec);
        if (got) {
          return got;
        }
        return loadURL(name, ec, urls, "its copy " + urls[name] + " could not be loaded");
      });
      b.depFailed = function () {
        return depFailed;
      };
      G.beside[name] = b;
      b.then(function (lib) {
        if (!G[name]) {
          G[name] = Promise.resolve(lib);
        }
      }, function () {
        delete G.beside[name];
      });
    }
    return b.catch(function (e) {
      // echarts-gl waits for echarts, which has waited already.
      if (b.depFailed()) {
        throw e;
      }
      return waitLoaded(name, e);
    });
  }

  /* Waits for an earlier (or slower) output to load the library; besideErr is
   * why its copy next to the page did not load, if that was tried. */
  function waitLoaded(name, besideErr) {
    return new Promise(function (resolve, reject) {
      var tries = 0;
      (function poll() {
        var p = G[name];
        if (p && typeof p.then === "function") {
          p.then(resolve, reject);
          return;
        }
        var got = check(name, null);
        if (got) {
          resolve(got);
          return;
        }
        // An earlier output tried and failed: say why, as its chart does.
        if (G.failed && G.failed[name]) {
          reject(G.failed[name]);
          return;
        }
        if (++tries > 100) {
          reject(new Error(besideErr ?
            name + " is not on this page and " + message(besideErr) + ": run the cell of the notebook's " +
            "first chart again, or keep the folder " + cfg.beside + " next to the notebook (or the exported page)" :
            name + " is not loaded on this page: this output was rendered with OmitAssets, " +
            "so an earlier output must load it (render a chart without OmitAssets first)"));
          return;
        }
        setTimeout(poll, 100);
      })();
    });
  }

  function need(name) {
    var p = G[name];
    if (p && typeof p.then === "function") {
      return p;
    }
    var ready = name === "echarts" ? globalECharts() : (hasGL() ? globalECharts() : null);
    var embedded = cfg.payload && cfg.payload[name];
    if (ready) {
      p = Promise.resolve(ready);
    } else if (!embedded && cfg.mode !== "url") {
      return fromElsewhere(name);
    } else {
      var dep = name === "echarts-gl" ? need("echarts") : Promise.resolve(null);
      p = dep.then(function (ec) {
        return embedded ? loadEmbedded(name, ec) : loadURL(name, ec, cfg.urls, name + " could not be loaded from " +
          cfg.urls[name] + ": charts need network access, or set CONVEXNN_ASSETS to a local copy (make setup fetches one)");
      });
      // A failed load is forgotten, so that a later output may try again,
      // but its error is kept for the outputs without the library
      // (OmitAssets) that wait for it.
      p.then(function () {
        if (G.failed) {
          delete G.failed[name];
        }
      }, function (e) {
        if (G[name] === p) {
          delete G[name];
          G.failed = G.failed || {};
          G.failed[name] = e;
        }
      });
    }
    G[name] = p;
    return p;
  }

  function webGL() {
    if (typeof G.webgl !== "boolean") {
      try {
        var c = document.createElement("canvas");
        G.webgl = !!(window.WebGLRenderingContext && (c.getContext("webgl") || c.getContext("experimental-webgl")));
      } catch (e) {
        G.webgl = false;
      }
    }
    return G.webgl;
  }

  /* Charts drawn on this page are kept in G.live as {el, stop}. When an
   * output is removed from the page (a live update replacing it, a cleared
   * output), its chart is disposed so that echarts does not keep it alive;
   * if the element comes back (a notebook that detaches off-screen cells),
   * it is drawn again. */
  function sweep() {
    var live = G.live || [];
    G.live = live.filter(function (r) {
      if (r.el.isConnected) {
        return true;
      }
      r.stop();
      return false;
    });
    var els = document.querySelectorAll(".convexnn-chart[data-convexnn-detached]");
    for (var i = 0; i < els.length; i++) {
      if (typeof els[i].__convexnnMount === "function") {
        els[i].__convexnnMount();
      }
    }
  }

  function watch() {
    if (G.observer || typeof MutationObserver !== "function") {
      return;
    }
    var pending = false;
    G.observer = new MutationObserver(function () {
      if (!pending) {
        pending = true;
        setTimeout(function () {
          pending = false;
          sweep();
        }, 200);
      }
    });
    G.observer.observe(document.documentElement, { childList: true, subtree: true });
  }

  function mount(ec, el) {
    var img = el.querySelector("img.convexnn-static");
    var box = el.querySelector(".convexnn-chart-canvas");
    if (!box) {
      box = document.createElement("div");
      box.className = "convexnn-chart-canvas";
      box.style.cssText = "width:100%;height:100%;";
      if (img) {
        img.style.display = "none";
      }
      el.appendChild(box);
    }
    var chart = null;
    try {
      chart = ec.init(box, null, { renderer: "canvas" });
      chart.setOption(option);
    } catch (e) {
      try {
        if (chart) {
          chart.dispose();
        }
      } catch (e2) {
        /* ignore */
      }
      el.removeChild(box);
      if (img) {
        img.style.display = "block";
      }
      fail("the chart could not be drawn: " + message(e) + (img ? "; below is a static view instead" : ""));
      return;
    }
    if (img) {
      el.removeChild(img);
    }
    el.removeAttribute("data-convexnn-detached");
    el.setAttribute("data-convexnn-drawn", "1");
    el.__convexnnMount = function () {
      if (el.isConnected && el.getAttribute("data-convexnn-detached")) {
        mount(ec, el);
      }
    };
    var ro = null;
    function onResize() {
      if (el.isConnected) {
        chart.resize();
      }
    }
    function stop() {
      window.removeEventListener("resize", onResize);
      if (ro) {
        ro.disconnect();
      }
      try {
        chart.dispose();
      } catch (e) {
        /* ignore */
      }
      el.setAttribute("data-convexnn-detached", "1");
    }
    window.addEventListener("resize", onResize);
    if (typeof ResizeObserver === "function") {
      ro = new ResizeObserver(onResize);
      ro.observe(el);
    }
    sweep();
    G.live.push({ el: el, stop: stop });
    watch();
  }

  function draw(ec) {
    whenAttached(function (el) {
      if (el.getAttribute("data-convexnn-drawn")) {
        return;
      }
      if (cfg.kind === "3d" && !webGL()) {
        fail("this viewer has no WebGL, so the 3-D chart cannot be drawn" +
          (el.querySelector("img.convexnn-static") ? "; below is a static view instead" : ""));
        return;
      }
      mount(ec, el);
    });
  }

  need(cfg.kind === "3d" ? "echarts-gl" : "echarts").then(draw, function (e) {
    fail(message(e));
  });
}
