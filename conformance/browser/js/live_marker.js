// The recorder's positive control: adds a hidden node holding `marker` to the page.
marker => document.body.append(Object.assign(document.createElement('i'),
  {hidden: true, textContent: marker}))
