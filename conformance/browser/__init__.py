"""The browser driver: the target's page driven in Chromium as a person does, every change
to its DOM recorded.

`session.py` (the worker's browser, context and chat page), `chat.py` (`ChatPage`: open the
page, ask, read what a turn showed) over `composer.py` (typing and sending the question),
`turn_message.py` (which message is the turn's), `turn_end.py` (when a turn has finished,
and its error) and `recording.py` (`DomRecording`, the kit's recorder); `setup_steps.py`
(the profile's set-up steps). The JavaScript each runs in the page is in `js/`, read by
`scripts.py`.
"""
