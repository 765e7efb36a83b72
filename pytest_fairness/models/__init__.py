"""Model access: the interface every provider implements, the providers, and the runner that sends requests.

- ``base``: ``ChatModel`` and the request and response types (a request's content keys the cache);
- ``spec``, ``registry``, ``build``: parsing a model spec, the provider table, building the model it names;
- ``local`` (llama.cpp, with ``local_scoring`` and ``local_generation``), ``openai``, ``litellm``, ``python``
  (a team's own app or judge): the providers;
- ``runner`` (concurrency, retries, accounting), ``cache``, ``ratelimit``, ``batch``, ``cores``: how requests
  are sent, remembered, paced, batched, and how the machine's cores are shared.

Nothing here imports a measure or a test double: measures build requests, and only the runner sends them.
"""
