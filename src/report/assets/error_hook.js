// Runs before anything else on the page: every uncaught error, unhandled rejection and console.error call is
// listed in the #console-errors banner (queued until the banner exists), so a broken page says so on screen and
// a headless browser's DOM dump shows it.
(function () {
  'use strict';
  var pending = [];
  function show(message) {
    var banner = document.getElementById('console-errors');
    if (!banner) { pending.push(message); return; }
    var line = document.createElement('div');
    line.className = 'console-error';
    line.textContent = message;
    banner.appendChild(line);
    banner.hidden = false;
  }
  window.addEventListener('error', function (e) {
    show('error: ' + (e.message || e.type) + (e.filename ? ' (' + e.filename + ':' + e.lineno + ')' : ''));
  });
  window.addEventListener('unhandledrejection', function (e) { show('unhandled rejection: ' + e.reason); });
  var original = console.error;
  console.error = function () {
    show('console.error: ' + Array.prototype.join.call(arguments, ' '));
    return original.apply(console, arguments);
  };
  document.addEventListener('DOMContentLoaded', function () {
    var queued = pending;
    pending = [];
    queued.forEach(show);
  });
})();
