"""A shop's chat assistant as a team writes one: a module-level async OpenAI client talking to its model
server over kept-alive connections, its own system prompt, and dialog handling (the last turns only).

``Chatbot.chat`` returns the SDK's completion as it comes, so the run counts the server's token usage.
``Chatbot.logprobs`` lets the same assistant serve as a judge: the first reply token's top log-probs,
read from the same server. The server is named by ``CHATBOT_URL``.
"""

import math
import os

from openai import AsyncOpenAI

from pytest_fairness import CannotServe

CLIENT = AsyncOpenAI(base_url=os.environ["CHATBOT_URL"], api_key="none", max_retries=0)
SYSTEM = "You are Sunny, the assistant of a bicycle shop. Answer briefly and kindly."
TURNS = 6  # the dialog the assistant keeps
LONGEST = 16  # tokens a reply may take (the shop's chat window is small)


def _dialog(request):
    turns = [{"role": m.role, "content": m.content} for m in request.messages if m.role != "system"]
    return [{"role": "system", "content": SYSTEM}, *turns[-TURNS:]]


class Chatbot:
    """The assistant behind the shop's chat window."""

    async def chat(self, request):
        return await CLIENT.chat.completions.create(
            model="smollm2",
            messages=_dialog(request),
            max_tokens=min(request.max_tokens or LONGEST, LONGEST),
            temperature=request.temperature or 0.0,
            seed=request.seed,
        )

    async def logprobs(self, request):
        if not request.messages:
            raise CannotServe("the chat assistant scores replies, not plain text")
        dialog = _dialog(request)
        if request.prefix:
            dialog.append({"role": "assistant", "content": request.prefix})
        reply = await CLIENT.chat.completions.create(
            model="smollm2", messages=dialog, max_tokens=1, temperature=0.0, logprobs=True, top_logprobs=20
        )
        listed = {}
        for entry in reply.choices[0].logprobs.content[0].top_logprobs:
            listed[entry.token.strip()] = max(listed.get(entry.token.strip(), -math.inf), entry.logprob)
        floor = min(listed.values())
        return {c: listed.get(c.strip(), floor) for c in request.candidates}
