"""An Agent's queued work: steering and follow-up user messages, their numbered IDs, and the
capacity checks that refuse work which could overflow the transcript."""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Sequence
from typing import Final, cast

from tether._base.exact_types import exactly
from tether._base.strings import surrogate_index
from tether.agent.agent._errors import (
    AgentInvalidMessageError,
    AgentMessageLimitError,
    AgentStateError,
)
from tether.agent.agent._state import MAX_AGENT_QUEUED_MESSAGES, AgentState
from tether.protocol import ImageBlock, Message, UserMessage

__all__ = ["WorkQueue", "next_generated_number"]

_GENERATED_ID: Final = re.compile(r"agent-user-(\d{6})")


def next_generated_number(messages: Sequence[Message]) -> int:
    """1 + the highest ``agent-user-NNNNNN`` number in ``messages`` (or 1)."""
    highest = 0
    for message in messages:
        match = _GENERATED_ID.fullmatch(message.id)
        if match is not None:
            highest = max(highest, int(match.group(1)))
    return highest + 1


class WorkQueue:
    """The steering and follow-up queues over an Agent's state, and the next generated
    user-message number."""

    __slots__ = ("follow_ups", "next_number", "state", "steering")

    def __init__(self, state: AgentState, next_number: int) -> None:
        self.state = state
        self.next_number = next_number
        self.steering: deque[UserMessage] = deque()
        self.follow_ups: deque[UserMessage] = deque()

    def take_prompt(self, content: str, images: Sequence[ImageBlock] = ()) -> list[UserMessage]:
        """Append a prompt's user message (then the first steering message, if any) to the
        transcript; returns what was accepted. Refuses work that could overflow it."""
        transcript = self.state.transcript
        steering = len(self.steering)
        queued = steering + len(self.follow_ups)
        self.state.assert_projected(len(transcript) + 1 + 2 * queued + (1 if steering == 0 else 0))
        message = self.user_message(content, images)
        transcript.append(message)
        accepted = [message]
        if steering:
            self.accept_from(self.steering, accepted)
        return accepted

    def take_continue(self) -> list[UserMessage]:
        """Accept what continuing the transcript starts with: a steering message, else (after
        an assistant message) a follow-up; raises ``AgentStateError`` when there is nothing
        to continue from."""
        transcript = self.state.transcript
        if not transcript:
            raise AgentStateError("Cannot continue without transcript messages")
        tail = transcript[-1]
        steering = len(self.steering)
        projected = len(transcript) + 2 * (steering + len(self.follow_ups))
        if tail.role != "assistant" and steering == 0:
            projected += 1
        self.state.assert_projected(projected)
        accepted: list[UserMessage] = []
        if (
            not self.accept_from(self.steering, accepted)
            and tail.role == "assistant"
            and not self.accept_from(self.follow_ups, accepted)
        ):
            raise AgentStateError("Cannot continue from an assistant message without queued work")
        return accepted

    def enqueue(
        self, queue: deque[UserMessage], content: str, images: Sequence[ImageBlock] = ()
    ) -> UserMessage:
        """Queue a user message on ``queue`` (``steering`` or ``follow_ups``); returns it."""
        steering = len(self.steering)
        follow_ups = len(self.follow_ups)
        if steering + follow_ups >= MAX_AGENT_QUEUED_MESSAGES:
            raise AgentMessageLimitError(
                f"Agent queue must not exceed {MAX_AGENT_QUEUED_MESSAGES} messages"
            )
        if queue is self.steering:
            steering += 1
        else:
            follow_ups += 1
        queued = steering + follow_ups
        state = self.state
        transcript = state.transcript
        length = len(transcript)
        active = state.active
        if active is not None and active.terminal is None:
            state.assert_projected(length + state.run_reserve + queued)
        else:
            projected = length + 2 * queued
            if not transcript:
                projected += 2 if steering == 0 else 1
            elif transcript[-1].role != "assistant" and steering == 0:
                projected += 1
            state.assert_projected(projected)
        message = self.user_message(content, images)
        queue.append(message)
        return message

    def user_message(self, content: object, images: Sequence[ImageBlock] = ()) -> UserMessage:
        """A user message with the next generated ID (``agent-user-NNNNNN``) and ``images``
        (``ImageBlock`` values, checked by ``UserMessage``). Text holding a surrogate code
        point is ``AgentInvalidMessageError`` (it is no Unicode text)."""
        if not exactly(content, str):
            raise TypeError("Agent user content must be a string")
        surrogate = surrogate_index(content)
        if surrogate is not None:  # no Unicode text: refused before it enters
            raise AgentInvalidMessageError(surrogate)
        number = self.next_number
        self.next_number += 1
        # UserMessage checks ``images`` and freezes a sequence into a tuple
        frozen = cast("tuple[ImageBlock, ...]", images)
        return UserMessage(id=f"agent-user-{number:06d}", content=content, images=frozen)

    def accept_from(self, queue: deque[UserMessage], accepted: list[UserMessage]) -> bool:
        """Move the oldest message of ``queue`` into the transcript (and ``accepted``);
        ``False`` when the queue is empty."""
        if not queue:
            return False
        transcript = self.state.transcript
        cap = self.state.cap
        if len(transcript) + 1 > cap:
            raise AgentMessageLimitError(f"Agent transcript must not exceed {cap} messages")
        message = queue.popleft()
        transcript.append(message)
        accepted.append(message)
        return True
