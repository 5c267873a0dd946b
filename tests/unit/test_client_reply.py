"""The client's stall figure (``Reply.stall_s``): how long a player that starts with the first chunk would run dry."""

from __future__ import annotations

import pytest

from wyoming_fasttts.client import Reply

SECOND = 24000 * 2  # bytes of 16-bit mono PCM at 24 kHz


def test_chunks_in_time_do_not_stall_and_a_late_one_counts_from_when_the_audio_ran_out() -> None:
    reply = Reply()
    reply.add(bytes(SECOND), 1.0)  # first audio at 1 s: playing until 2 s
    reply.add(bytes(SECOND // 2), 1.5)  # in time: playing until 2.5 s
    assert (reply.first_audio_s, reply.stall_s) == (1.0, 0.0)
    reply.add(bytes(SECOND), 3.0)  # the audio ran out at 2.5 s: 0.5 s of silence, then until 4 s
    reply.add(bytes(SECOND), 4.25)  # 0.25 s more
    assert reply.stall_s == pytest.approx(0.75)
    assert reply.seconds == pytest.approx(3.5)
