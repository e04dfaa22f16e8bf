  /* The URL of the folder next to the page that holds the chart libraries
   * and the loader (plots.WriteBeside): in the classic Notebook the folder
   * next to the notebook, served under files/; elsewhere relative to the
   * page, as for an HTML export saved next to its notebook. Shared by
   * loader.js and stub.js. */
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
