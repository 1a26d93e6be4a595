// deniable results page: reload every data-refresh seconds while the page is open (a
// meta refresh would stop after the first download, which Chromium counts as navigation);
// a form with data-confirm (closing the survey) asks before it is sent.
"use strict";
(function refresh() {
  const seconds = Number(document.body.dataset.refresh);
  if (!(seconds >= 1)) return;
  window.setTimeout(() => window.location.reload(), seconds * 1000);
})();

document.querySelectorAll("form[data-confirm]").forEach((form) => {
  form.addEventListener("submit", (event) => {
    if (!window.confirm(form.dataset.confirm)) event.preventDefault();
  });
});
