"""The app killed mid-turn and started again, and a data folder it cannot use (issue 27).

`python -m app` runs as a child process with its data under the test's folder. A kill -9
gives it no chance to close anything: SQLite's write-ahead log must leave the database
whole, the history exactly the turns that finished, and the restarted app working.
"""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import threading
from pathlib import Path
from typing import Any

import httpx

from ...support.deadlines import DEADLINE_S
from ...support.processes import first_lines
from ..helpers.app_process import PAGE, chat_frames, start_demo


def page_of(process: subprocess.Popen[str]) -> str:
    line = first_lines(process, 2)[0]
    page = PAGE.match(line)
    assert page, line
    return page.group(1)


def history(page: str) -> list[dict[str, Any]]:
    response = httpx.get(f"{page}/api/history", params={"limit": 200}, timeout=DEADLINE_S)
    return response.json()["turns"]


def integrity(data: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(data / "scaffold-guard.sqlite3") as db:
        return db.execute("PRAGMA integrity_check").fetchall()


def stop(process: subprocess.Popen[str]) -> str:
    process.send_signal(signal.SIGTERM)
    return process.communicate(timeout=DEADLINE_S)[1]


def killed(process: subprocess.Popen[str]) -> None:
    process.kill()  # SIGKILL: no shutdown, no close, no checkpoint
    process.communicate(timeout=DEADLINE_S)


def test_a_kill_mid_turn_keeps_the_database_whole_and_the_finished_turns(tmp_path: Path):
    finished = [f"When do backups run? [[mock:clean#done{n}]]" for n in range(3)]
    process = start_demo(tmp_path)
    try:
        page = page_of(process)
        for question in finished:
            assert chat_frames(page, {"message": question})[-1]["type"] == "done"
        body = {"message": "Walk me through the backup [[mock:slow#cut]]"}
        with httpx.stream("POST", f"{page}/api/chat", json=body, timeout=DEADLINE_S) as reply:
            for line in reply.iter_lines():
                if line.startswith("data: ") and '"delta"' in line:
                    break  # the turn is streaming: kill the app now
            killed(process)
    finally:
        if process.poll() is None:
            killed(process)
    again = start_demo(tmp_path)
    try:
        page = page_of(again)
        assert [turn["question"] for turn in history(page)] == finished[::-1]
        assert integrity(tmp_path / "data") == [("ok",)]
        after = "When do backups run? [[mock:clean#after]]"
        assert chat_frames(page, {"message": after})[-1]["type"] == "done"
        assert history(page)[0]["question"] == after
    finally:
        err = stop(again)
    assert "Traceback" not in err


def test_a_kill_during_concurrent_turns_leaves_only_whole_rows(tmp_path: Path):
    questions = [f"When do backups run? [[mock:clean#burst{n}]]" for n in range(16)]
    process = start_demo(tmp_path)
    one_done = threading.Event()

    def ask(page: str, question: str) -> None:
        try:
            if chat_frames(page, {"message": question})[-1]["type"] == "done":
                one_done.set()
        except (httpx.HTTPError, ValueError):
            pass  # the app was killed under this turn

    try:
        page = page_of(process)
        threads = [threading.Thread(target=ask, args=(page, q)) for q in questions]
        for thread in threads:
            thread.start()
        assert one_done.wait(DEADLINE_S), "no turn finished"
        killed(process)
        for thread in threads:
            thread.join(DEADLINE_S)
    finally:
        if process.poll() is None:
            killed(process)
    again = start_demo(tmp_path)
    try:
        turns = history(page_of(again))
        assert integrity(tmp_path / "data") == [("ok",)]
    finally:
        stop(again)
    assert 1 <= len(turns) <= len(questions)
    for turn in turns:
        assert turn["question"] in questions
        assert turn["answer"], turn
        assert turn["finish_reason"] == "stop", turn
        assert isinstance(turn["sources"], list), turn


def test_a_data_folder_that_is_a_file_stops_the_start_with_a_clear_error(tmp_path: Path):
    (tmp_path / "data").write_text("not a folder", encoding="utf-8")
    process = start_demo(tmp_path)
    _, err = process.communicate(timeout=DEADLINE_S)
    assert process.returncode == 2
    assert f"app: the data folder {tmp_path / 'data'} is not a folder" in err
    assert "Traceback" not in err


def test_a_database_that_is_not_one_stops_the_start_with_a_clear_error(tmp_path: Path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "scaffold-guard.sqlite3").write_bytes(b"not a database " * 512)
    process = start_demo(tmp_path)
    _, err = process.communicate(timeout=DEADLINE_S)
    assert process.returncode == 2
    assert "cannot be opened (file is not a database)" in err
    assert "Traceback" not in err
