/**
 * The dashboard's one script, sent under each response's CSP nonce. It only enhances pages
 * that work without it:
 * - `<time datetime>` elements and chart labels (`data-time`), rendered in UTC, are shown in
 *   the browser's local time;
 * - a form marked `data-local-range` has `datetime-local` inputs (`data-local="from|to"`)
 *   whose values are the browser's local time; on submit they become the ISO instants of its
 *   hidden `from`/`to` inputs (what the jobs and logs APIs take). "To" is inclusive of the
 *   whole minute shown, so it becomes that minute's last millisecond. On load the inputs are
 *   filled back from the instants (`data-instant`), in local time, and the zone is named;
 * - a form with `data-confirm` asks before it submits (revoking, unsetting, removing).
 * Without the script the inputs are read as UTC, and the page says so.
 */
export const DASHBOARD_SCRIPT = `(function () {
  'use strict';
  function pad(n) { return String(n).padStart(2, '0'); }
  function localInput(date) {
    return date.getFullYear() + '-' + pad(date.getMonth() + 1) + '-' + pad(date.getDate()) + 'T' + pad(date.getHours()) + ':' + pad(date.getMinutes());
  }
  var zone = '';
  try { zone = Intl.DateTimeFormat().resolvedOptions().timeZone || ''; } catch (e) { zone = ''; }
  var format = new Intl.DateTimeFormat(undefined, { year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit' });
  document.querySelectorAll('time[datetime]').forEach(function (el) {
    var at = new Date(el.getAttribute('datetime'));
    if (!isNaN(at.getTime())) { el.textContent = format.format(at); el.title = at.toISOString(); }
  });
  var short = new Intl.DateTimeFormat(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });
  document.querySelectorAll('[data-time]').forEach(function (el) {
    var at = new Date(el.getAttribute('data-time'));
    if (!isNaN(at.getTime())) el.textContent = short.format(at);
  });
  document.querySelectorAll('[data-zone]').forEach(function (el) { el.textContent = zone ? 'Times in ' + zone : 'Times in your local time'; });
  document.querySelectorAll('form[data-local-range]').forEach(function (form) {
    form.querySelectorAll('input[data-local]').forEach(function (input) {
      var instant = input.getAttribute('data-instant');
      if (instant) { var at = new Date(instant); if (!isNaN(at.getTime())) input.value = localInput(at); }
    });
    form.addEventListener('submit', function () {
      form.querySelectorAll('input[data-local]').forEach(function (input) {
        var which = input.getAttribute('data-local');
        var target = form.querySelector('input[type=hidden][name="' + which + '"]');
        if (!target) return;
        if (!input.value) { target.value = ''; return; }
        var at = new Date(input.value);
        if (isNaN(at.getTime())) { target.value = ''; return; }
        if (which === 'to') at = new Date(at.getTime() + 59999);
        target.value = at.toISOString();
      });
    });
  });
  document.querySelectorAll('form[data-confirm]').forEach(function (form) {
    form.addEventListener('submit', function (event) {
      if (!window.confirm(form.getAttribute('data-confirm'))) event.preventDefault();
    });
  });
})();`
