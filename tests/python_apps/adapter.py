"""A synchronous chatbot as found in a public repository: a plain function that builds an ``openai.OpenAI``
client per call and asks its server for a long reply. The server is named by ``ADAPTER_URL``."""

import os

import openai


def reply(messages):
    client = openai.OpenAI(base_url=os.environ["ADAPTER_URL"], api_key="none", max_retries=0)
    completion = client.chat.completions.create(model="chat", messages=messages, max_tokens=1200)
    return completion.choices[0].message.content
