"""A replica that starts fine and fails its health check once asked to (GET /sick?fail=1)."""
from ray import serve


@serve.deployment
class Patient:
    def __init__(self) -> None:
        self._sick = False

    def check_health(self) -> None:
        if self._sick:
            raise RuntimeError("Patient was told to fail its health check (test app)")

    async def __call__(self, request) -> str:
        if request.query_params.get("fail") == "1":
            self._sick = True
            return "will fail the next health check"
        return "healthy"


app = Patient.bind()
