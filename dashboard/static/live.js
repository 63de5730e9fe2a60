// Live parts of a page: each element with data-events listens to that URL
// (server-sent events) for events named by its data-event, and puts each
// one's data, rendered and escaped by the server, in place of its content
// (or, with data-mode="prepend", above it, keeping the first data-keep
// rows). An "end" event closes the stream for good (a job that finished)
// and says why. Shows the connection state in #live-status; the browser's
// EventSource reconnects by itself.
'use strict';
(function () {
  var status = document.getElementById('live-status');
  if (!status || !window.EventSource) return;
  function show(state, text) {
    status.setAttribute('data-state', state);
    status.textContent = 'Live updates: ' + text;
  }
  var targets = document.querySelectorAll('[data-events]');
  Array.prototype.forEach.call(targets, function (target) {
    var source = new EventSource(target.getAttribute('data-events'));
    var prepend = target.getAttribute('data-mode') === 'prepend';
    var keep = parseInt(target.getAttribute('data-keep') || '0', 10);
    source.onopen = function () { show('open', 'connected'); };
    source.onerror = function () {
      show(source.readyState === EventSource.CLOSED ? 'closed' : 'reconnecting',
           source.readyState === EventSource.CLOSED ? 'disconnected (reload the page)' : 'reconnecting…');
    };
    source.addEventListener(target.getAttribute('data-event'), function (e) {
      if (prepend) {
        target.insertAdjacentHTML('afterbegin', e.data);
        while (keep > 0 && target.children.length > keep) target.removeChild(target.lastElementChild);
      } else {
        target.innerHTML = e.data;
      }
      show('open', 'connected');
    });
    source.addEventListener('end', function (e) {
      source.close();
      var text = document.createElement('div');
      text.innerHTML = e.data;
      show('closed', text.textContent);
    });
  });
})();
