// What the composer holds, and whether it is a form control (one a page can disable).
el => (el instanceof HTMLInputElement || el instanceof HTMLTextAreaElement)
  ? [el.value, true] : [el.innerText || el.textContent || "", false]
