"""`python -m conformance init URL --mock-url MOCK`: a first profile for a page the kit has
never met, found by using the page the way a person does.

It opens the page in the kit's browser, gets past a welcome dialog or an empty model picker
if one is in the way (and writes that down as `[[setup]]`), finds the text box, sends a
question that plays init's own flow on the mock, and watches the DOM: the element that
shows the flow's answer is the answer, the sibling of the question's bubble that holds it is
the message, a slow answer shows how a streaming message differs from a finished one (and
which new button stops it), a thinking flow finds the thinking display, and a reply that is
only markup twice finds the error display. The profile is read back with `load_profile`
before it is written; the kit's preflight then checks it against the page.

Deliberate choices:
- init's flows are its own (added to the mock at start), with texts no page shows by
  chance, so that "the element holding this text" names one element.
- What it cannot find it says, in the profile's comments and on the terminal, rather than
  guessing; `tools` comes from the journal (did the app offer tools?), `log` is left for
  the user (nothing on the page names a log line).

`command.py` (the command), `steps.py` (each step on the page) over `probe.py` (the page
functions in js/discover.js, and polling), `rules.py` (what init concludes, pure) and
`flows.py` (init's own flows); the profile is written by conformance/profiles/writer.py.
"""
