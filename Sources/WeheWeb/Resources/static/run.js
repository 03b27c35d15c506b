// Live progress of a test run: listens to the page's server-sent events and updates text, progress bar, phases,
// log and chart. Values are only ever set as text (never parsed as HTML). Without scripts the page reloads itself.
(function () {
  "use strict";
  var run = document.getElementById("run");
  if (!run || !window.EventSource || run.dataset.state === "finished" || run.dataset.state === "failed") { return; }
  var status = document.getElementById("run-status");
  var bar = document.getElementById("run-progress");
  var log = document.getElementById("run-log");
  var result = document.getElementById("run-result");
  var link = document.getElementById("run-result-link");
  var phases = Array.prototype.slice.call(document.querySelectorAll("#run-phases .phase"));

  function setPhase(name) {
    var seen = false;
    phases.forEach(function (item) {
      var current = item.dataset.phase === name;
      item.className = "phase " + (current ? "phase-current" : (seen ? "phase-todo" : "phase-done"));
      if (current) { seen = true; }
    });
    if (!seen) { phases.forEach(function (item) { item.className = "phase phase-todo"; }); }
  }

  // The chart is drawn by the server (in Swift); fetch a fresh copy at most once a second while samples arrive.
  var figure = document.getElementById("live-figure");
  var pending = false;
  function redraw() {
    if (!figure || pending) { return; }
    pending = true;
    window.setTimeout(function () {
      fetch(run.dataset.chart, { credentials: "same-origin" })
        .then(function (response) { return response.ok ? response.text() : null; })
        .then(function (text) {
          pending = false;
          if (text && text.indexOf("<svg") === 0) { figure.innerHTML = text; }
        })
        .catch(function () { pending = false; });
    }, 1000);
  }

  var source = new EventSource(run.dataset.events);
  source.addEventListener("phase", function (event) {
    var data = JSON.parse(event.data);
    setPhase(data.phase);
  });
  source.addEventListener("fraction", function (event) {
    var data = JSON.parse(event.data);
    bar.value = data.value;
    bar.textContent = Math.round(data.value * 100) + "%";
  });
  source.addEventListener("sample", function (event) {
    redraw();
  });
  source.addEventListener("message", function (event) {
    var data = JSON.parse(event.data);
    var item = document.createElement("li");
    item.textContent = data.text;
    log.appendChild(item);
    log.scrollTop = log.scrollHeight;
  });
  source.addEventListener("state", function (event) {
    var data = JSON.parse(event.data);
    status.textContent = data.label;
    run.dataset.state = data.state;
    run.className = "run run-" + data.state;
    if (data.state === "finished") {
      bar.value = 1;
      phases.forEach(function (item) { item.className = "phase phase-done"; });
      if (data.href) { link.setAttribute("href", data.href); result.hidden = false; }
      // The server writes each test's verdict into the finished page: load it.
      window.setTimeout(function () { window.location.reload(); }, 300);
    }
    if (data.state === "finished" || data.state === "failed") { source.close(); }
    if (data.state === "failed") { window.setTimeout(function () { window.location.reload(); }, 300); }
  });
  source.onerror = function () {
    if (run.dataset.state === "finished" || run.dataset.state === "failed") { source.close(); }
  };
}());
