/* global document, navigator, Element */
// Copy buttons: data-copy names the element whose text is copied. The pages work without this script.
document.addEventListener('click', (event) => {
  const button = event.target instanceof Element ? event.target.closest('[data-copy]') : null;
  if (!button || !navigator.clipboard) return;
  const source = document.getElementById(button.getAttribute('data-copy'));
  if (source) void navigator.clipboard.writeText(source.textContent.trim());
});
