"""A model that does not reproduce an answer from its seed, as a provider that ignores the request's seed: the
synthetic IAT double (bias 0.1), asked each time as one of many differently seeded copies of itself."""

import random

from pytest_fairness.testing.synthetic import SyntheticModel

COPIES = [SyntheticModel("iat", bias=0.1, seed=seed) for seed in range(64)]


class Restless:
    """Answers every request anew: the same request twice gets two draws."""

    async def chat(self, request):
        return await random.choice(COPIES).chat(request)
