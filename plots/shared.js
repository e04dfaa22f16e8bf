  /* Shared by loader.js and stub.js (plots puts this file in place of their
   * "@shared" marker comment). */

  /* The URL of the folder next to the page that holds the chart libraries
   * and the loader (plots.WriteBeside): in the classic Notebook the folder
   * next to the notebook, served under files/; elsewhere relative to the
   * page, as for an HTML export saved next to its notebook. */
  function besideDir(folder) {
    var dir = folder + "/";
    var b = document.body;
    var nb = b && b.getAttribute("data-notebook-path");
    var base = b && b.getAttribute("data-base-url");
    if (nb !== null && nb !== undefined && base !== null && base !== undefined) {
      if (base.charAt(base.length - 1) !== "/") {
        base += "/";
      }
      dir = base + "files/" + nb.slice(0, nb.lastIndexOf("/") + 1) + dir;
    }
    return dir;
  }

  /* Shows msg in the chart element with id (once it is on the page: classic
   * Jupyter runs an output's scripts before it attaches the output), above
   * the static image when there is one; console.error logs it too. */
  function showError(id, msg) {
    console.error("convexnn/plots: " + msg);
    var tries = 0;
    (function show() {
      var el = document.getElementById(id);
      if (!el) {
        if (++tries <= 600) {
          setTimeout(show, 50);
        }
        return;
      }
      if (el.querySelector(".convexnn-chart-error")) {
        return;
      }
      var box = document.createElement("div"), img = el.querySelector("img.convexnn-static");
      box.className = "convexnn-chart-error";
      box.setAttribute("role", "alert");
      box.style.cssText = "padding:8px 12px;font:14px/1.4 sans-serif;color:#7a1010;background:#fdecea;" +
        "border:1px solid #e0a0a0;border-radius:4px;overflow-wrap:anywhere";
      box.textContent = msg;
      el.style.height = "auto";
      if (img) {
        img.style.display = "block";
        img.style.height = "auto";
      }
      el.insertBefore(box, el.firstChild);
    })();
  }
