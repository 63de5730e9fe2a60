// Live queue table: listens to /events (server-sent events, one message per
// poll of the dashboard's shared poller) and puts each new table, rendered
// and escaped by the server, in place of the old one. Shows the connection
// state in #live-status; the browser's EventSource reconnects by itself.
'use strict';
(function () {
  var target = document.getElementById('queues-live');
  var status = document.getElementById('live-status');
  if (!target || !status || !window.EventSource) return;
  function show(state, text) {
    status.setAttribute('data-state', state);
    status.textContent = 'Live updates: ' + text;
  }
  var source = new EventSource(target.getAttribute('data-events'));
  source.onopen = function () { show('open', 'connected'); };
  source.onerror = function () {
    show(source.readyState === EventSource.CLOSED ? 'closed' : 'reconnecting',
         source.readyState === EventSource.CLOSED ? 'disconnected (reload the page)' : 'reconnecting…');
  };
  source.addEventListener('queues', function (e) {
    target.innerHTML = e.data;
    show('open', 'connected');
  });
})();
