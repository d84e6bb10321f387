"""ReadBatches: which reads go to Redis together, and who gets which answer."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stoker.backends.redis.read_batch import ReadBatches

# An operation: ("want", key), ("send",) (take a batch if none flies) or ("answer",).
OPERATIONS = st.lists(st.one_of(st.tuples(st.just("want"), st.integers(0, 5)),
                                st.tuples(st.just("send")), st.tuples(st.just("answer"))),
                      max_size=60)


class Replay:
    """Runs operations on a :class:`ReadBatches` as its shell would, against a store whose
    state changes at every step (so an answer tells when it was read)."""

    def __init__(self, limit: int) -> None:
        self.batches: ReadBatches[int, int] = ReadBatches(limit)
        self.limit = limit
        self.step = 0
        self.wanted: dict[int, tuple[int, int]] = {}
        """waiter → (its key, the step it was wanted at)"""
        self.answers: dict[int, tuple[int, int]] = {}
        """waiter → (the key answered, the step its batch was taken at)"""
        self.flying: tuple[list[int], int] | None = None
        self.waiting_order: list[int] = []
        """Keys waiting, in the order they were first wanted (the model)."""
        self.due = False
        """Whether the shell has been told to take a batch (the model)."""

    def run(self, operation: tuple[object, ...]) -> None:
        self.step += 1
        if operation[0] == "want":
            self.want(int(operation[1]))  # type: ignore[call-overload]
        elif operation[0] == "send" and self.flying is None:
            self.send()
        elif operation[0] == "answer" and self.flying is not None:
            self.answer()

    def want(self, key: int) -> None:
        waiter = len(self.wanted)
        idle = self.flying is None and not self.due
        self.wanted[waiter] = (key, self.step)
        if key not in self.waiting_order:
            self.waiting_order.append(key)
        told = self.batches.want(key, waiter)
        assert told == idle  # the shell is told once per busy stretch
        self.due = self.due or told
        assert self.batches.waiting == len(self.waiting_order)

    def send(self) -> None:
        keys = self.batches.take()
        self.due = False
        assert keys == self.waiting_order[:self.limit]  # distinct, oldest first, bounded
        assert len(set(keys)) == len(keys) <= self.limit
        self.waiting_order = self.waiting_order[len(keys):]
        if keys:
            assert self.batches.in_flight
            self.flying = (keys, self.step)
        with pytest.raises(RuntimeError):
            if keys:
                self.batches.take()  # one batch in flight at a time
            else:
                self.batches.finish()

    def answer(self) -> None:
        assert self.flying is not None
        keys, taken_at = self.flying
        flown = self.batches.finish()
        assert list(flown) == keys
        for key, waiters in flown.items():
            assert waiters == sorted(waiters)  # in the order they were wanted
            for waiter in waiters:
                assert waiter not in self.answers  # answered once
                self.answers[waiter] = (key, taken_at)
        self.flying = None
        self.due = bool(self.waiting_order)  # the next batch is due at once
        assert not self.batches.in_flight

    def drain(self) -> None:
        """Answer and send until nothing waits (what the shell does)."""
        if self.flying is not None:
            self.answer()
        while self.batches.waiting:
            self.step += 1
            self.send()
            self.answer()


@given(OPERATIONS, st.integers(1, 4))
def test_every_waiter_is_answered_once_by_a_batch_of_its_key_sent_after_it(
        operations: list[tuple[object, ...]], limit: int) -> None:
    replay = Replay(limit)
    for operation in operations:
        replay.run(operation)
    replay.drain()
    assert replay.answers.keys() == replay.wanted.keys()
    for waiter, (key, wanted_at) in replay.wanted.items():
        answered_key, taken_at = replay.answers[waiter]
        assert answered_key == key
        assert taken_at > wanted_at  # never by a batch already in flight when it was wanted
    assert replay.batches.take() == []  # nothing left
    assert not replay.batches.in_flight


@given(OPERATIONS)
def test_drop_hands_back_every_waiter_not_answered(operations: list[tuple[object, ...]]) -> None:
    replay = Replay(2)
    for operation in operations:
        replay.run(operation)
    dropped = replay.batches.drop()
    assert sorted(dropped) == sorted(set(replay.wanted) - set(replay.answers))
    assert replay.batches.waiting == 0 and not replay.batches.in_flight
    assert replay.batches.want(7, len(replay.wanted))  # a new busy stretch begins


def test_equal_keys_wanted_together_are_read_once() -> None:
    batches: ReadBatches[str, str] = ReadBatches(8)
    assert batches.want("/a", "first")
    assert not batches.want("/a", "second")
    assert not batches.want("/b", "third")
    assert batches.take() == ["/a", "/b"]
    assert not batches.want("/a", "fourth")  # wanted while in flight: the next batch
    assert batches.finish() == {"/a": ["first", "second"], "/b": ["third"]}
    assert batches.take() == ["/a"]
    assert batches.finish() == {"/a": ["fourth"]}


def test_a_batch_holds_at_least_one_key() -> None:
    with pytest.raises(ValueError, match="at least one key"):
        ReadBatches(0)
