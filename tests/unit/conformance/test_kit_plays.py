"""The kit's plays: each flow played once per worker, kept with its error when it fails.

The browser session and the chat page are fakes here: what is under test is the bookkeeping
(played once, keys, the follow-up, the recorder flag, the log offset, a failed play kept as
its error with the page replaced, the requests read once), not the browser.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from conformance.browser.chat import TurnView
from conformance.browser.recording import Sighting
from conformance.oracle.clauses import MARKERS
from conformance.oracle.expected import Expected
from conformance.run.plays import FOLLOW_UPS, Plays
from conformance.run.questions import question


def view(answer: str = "ok") -> TurnView:
    return TurnView(state="done", answer=answer, error="", thinking="", turn_id="t1")


@dataclass
class FakeRecording:
    watched: tuple[str, ...] = ()
    sightings: list[Sighting] = field(default_factory=list[Sighting])

    def watch(self, needles: tuple[str, ...]) -> None:
        self.watched = needles


@dataclass
class FakeChat:
    recording: FakeRecording = field(default_factory=FakeRecording)
    fail_on: set[str] = field(default_factory=set[str])  # flows whose turn raises
    live: bool = True
    asked: list[str] = field(default_factory=list[str])
    opened: int = 0

    def open(self) -> None:
        self.opened += 1

    def ask(self, text: str) -> TurnView:
        self.asked.append(text)
        if any(f"[[mock:{flow}#" in text for flow in self.fail_on):
            raise TimeoutError("the turn never finished")
        return view(f"answer to {text}")

    def prove_live(self) -> None:
        if not self.live:
            raise AssertionError("the DOM recorder is not live")

    def recorded(self) -> str:
        return "\n".join(self.asked)


@dataclass
class FakeSession:
    chat_page: FakeChat
    tracing: bool = False
    chunks: list[tuple[str, Path | None]] = field(default_factory=list[tuple[str, Path | None]])
    discarded: int = 0

    def chat(self) -> FakeChat:
        return self.chat_page

    def begin_chunk(self, title: str) -> bool:
        if self.tracing:
            self.chunks.append((title, None))
        return self.tracing

    def end_chunk(self, path: Path | None) -> None:
        self.chunks[-1] = (self.chunks[-1][0], path)

    def discard_page(self) -> None:
        self.discarded += 1


@dataclass
class FakeUpstream:
    reads: list[str] = field(default_factory=list[str])
    begun: list[str] = field(default_factory=list[str])

    def begin(self, key: str) -> None:
        self.begun.append(key)

    def requests(self, key: str) -> list[Any]:
        self.reads.append(key)
        return [f"request of {key}"]

    def expected(self, flow: str) -> Expected | None:
        canary = "CANARY-7" if flow.startswith("scaffold") else None
        return Expected(cast(Any, None), canary)


@dataclass
class FakeTarget:
    upstream: FakeUpstream
    log_file: Path | None = None


def plays_over(
    chat: FakeChat, tmp_path: Path, *, tracing: bool = False, log: Path | None = None
) -> tuple[Plays, FakeSession, FakeUpstream]:
    session = FakeSession(chat, tracing=tracing)
    upstream = FakeUpstream()
    keys = iter(f"k{n}" for n in range(1, 100))
    plays = Plays(
        cast(Any, FakeTarget(upstream, log)), cast(Any, session), lambda: next(keys), tmp_path
    )
    return plays, session, upstream


def test_a_flow_is_played_once_and_shared_by_every_later_request_for_it(tmp_path: Path):
    chat = FakeChat()
    plays, _, _ = plays_over(chat, tmp_path)
    first = plays.get("clean")
    assert plays.get("clean") is first
    assert chat.asked == [question("clean", "k1")]
    assert chat.opened == 1


def test_each_flow_gets_its_own_fresh_document_and_key(tmp_path: Path):
    chat = FakeChat()
    plays, _, _ = plays_over(chat, tmp_path)
    assert (plays.get("clean").key, plays.get("lookalike").key) == ("k1", "k2")
    assert chat.opened == 2


def test_a_follow_up_flow_is_asked_on_the_same_page_with_its_own_key(tmp_path: Path):
    chat = FakeChat()
    plays, _, _ = plays_over(chat, tmp_path)
    play = plays.get("scaffold-repeat")
    assert play.keys == ("k1", "k2")
    assert chat.asked == [
        question("scaffold-repeat", "k1"),
        question(FOLLOW_UPS["scaffold-repeat"], "k2"),
    ]
    assert play.follow_up is not None
    assert chat.opened == 1


def test_a_play_whose_turn_raised_is_kept_as_its_error_and_not_played_again(tmp_path: Path):
    chat = FakeChat(fail_on={"clean"})
    plays, session, _ = plays_over(chat, tmp_path)
    play = plays.get("clean")
    assert play.error == "TimeoutError: the turn never finished"
    assert plays.get("clean") is play
    assert len(chat.asked) == 1
    assert session.discarded == 1  # the next play gets a new page
    assert play.recorded == question("clean", "k1")  # what the page showed is still kept


def test_a_failed_follow_up_leaves_the_question_judgeable(tmp_path: Path):
    chat = FakeChat(fail_on={FOLLOW_UPS["scaffold-repeat"]})
    plays, session, _ = plays_over(chat, tmp_path)
    play = plays.get("scaffold-repeat")
    assert play.error is None
    assert play.view.answer
    assert play.follow_up is None
    assert play.follow_up_error == "TimeoutError: the turn never finished"
    assert session.discarded == 1


def test_a_recorder_that_missed_its_marker_is_a_flag_not_an_error(tmp_path: Path):
    plays, _, _ = plays_over(FakeChat(live=False), tmp_path)
    play = plays.get("clean")
    assert (play.recorder_live, play.error) == (False, None)


def test_the_requests_are_read_once_per_key_on_first_use(tmp_path: Path):
    plays, _, upstream = plays_over(FakeChat(), tmp_path)
    play = plays.get("scaffold-repeat")
    assert upstream.reads == []  # nothing read until a clause asks
    assert play.requests() == play.requests() == ["request of k1"]
    assert play.requests("k2") == ["request of k2"]
    assert upstream.reads == ["k1", "k2"]


def test_every_key_of_a_play_is_begun_before_its_question_is_sent(tmp_path: Path):
    plays, _, upstream = plays_over(FakeChat(), tmp_path)
    plays.get("scaffold-repeat")
    assert upstream.begun == ["k1", "k2"]


def test_the_log_offset_is_the_log_size_before_the_question(tmp_path: Path):
    log = tmp_path / "app.log"
    log.write_text("earlier turn\n", encoding="utf-8")
    plays, _, _ = plays_over(FakeChat(), tmp_path, log=log)
    assert plays.get("clean").log_offset == len("earlier turn\n")


def test_a_missing_log_counts_from_zero(tmp_path: Path):
    plays, _, _ = plays_over(FakeChat(), tmp_path, log=tmp_path / "not-yet.log")
    assert plays.get("clean").log_offset == 0


def test_with_tracing_each_play_is_one_chunk_written_to_its_own_file(tmp_path: Path):
    plays, session, _ = plays_over(FakeChat(), tmp_path, tracing=True)
    clean, mixed = plays.get("clean"), plays.get("scaffold-mixed")
    assert session.chunks == [("play clean", clean.trace), ("play scaffold-mixed", mixed.trace)]
    assert clean.trace is not None
    assert mixed.trace is not None
    assert clean.trace.parent == tmp_path
    assert clean.trace != mixed.trace


def test_without_tracing_a_play_has_no_trace(tmp_path: Path):
    plays, session, _ = plays_over(FakeChat(), tmp_path)
    assert plays.get("clean").trace is None
    assert session.chunks == []


def test_a_play_watches_for_the_markers_and_its_flows_canary(tmp_path: Path):
    chat = FakeChat()
    plays, _, _ = plays_over(chat, tmp_path)
    plays.get("clean")
    assert chat.recording.watched == MARKERS
    plays.get("scaffold-mixed")
    assert chat.recording.watched == (*MARKERS, "CANARY-7")


def test_a_play_keeps_what_the_page_showed_of_the_watched_strings(tmp_path: Path):
    chat = FakeChat()
    chat.recording.sightings.append(Sighting("<|tool_call_start|>", 812.5, b"png"))
    plays, _, _ = plays_over(chat, tmp_path)
    assert plays.get("scaffold-mixed").sightings == (
        Sighting("<|tool_call_start|>", 812.5, b"png"),
    )
