"""A Serve app shaped like a BioEngine app: a `ProxyDeployment` ingress that
registers the app in Hypha, and a sibling `Model` deployment that may scale to
zero. The proxy's registration rule is switchable (user_config "behaviour"):

  buggy_deregister_at_zero  registers once every sibling has a RUNNING replica and
                            deregisters whenever one drops to zero RUNNING replicas,
                            idle or not (the bug of seed 000, BioEngine <= 0.16.1)
  fixed                     a sibling is serviceable when it has a RUNNING replica or
                            Serve calls it HEALTHY/UPSCALING/DOWNSCALING; registers
                            when all are, deregisters only when one stops being so
  wait_for_running          never registers before every sibling has a RUNNING
                            replica (incident 1b: deployed at min_replicas 0 it never
                            registers); after that behaves like `fixed`

user_config keys: server_url, token_file, workspace (optional), client_id_prefix,
behaviour, poll_s (default 1). The service id is
`{workspace}/{client_id_prefix}-{sha1(app)[:8]}:{app}`, type bioengine-app, public.
The token comes from a file so it never shows in the Serve config or API.
Like the real proxy, it reports healthy to Ray while it is not registered.
"""
import asyncio
import hashlib
import logging
from typing import Dict, Optional, Tuple

from ray import serve
from ray.serve.handle import DeploymentHandle

log = logging.getLogger("ray.serve")

SERVICEABLE = ("HEALTHY", "UPSCALING", "DOWNSCALING")
BEHAVIOURS = ("buggy_deregister_at_zero", "fixed", "wait_for_running")


def _text(v) -> str:
    return str(getattr(v, "value", v))


@serve.deployment
class Model:
    def predict(self, x: str) -> str:
        return f"predicted:{x}"


@serve.deployment
class ProxyDeployment:
    def __init__(self, model: DeploymentHandle) -> None:
        self._model = model
        self._app = serve.get_replica_context().app_name
        self._cfg: Dict = {}
        self._server = None
        self._registered = False
        self._ever_ready = False
        self._task: Optional[asyncio.Task] = None

    async def reconfigure(self, config: Dict) -> None:
        behaviour = config.get("behaviour", "fixed")
        if behaviour not in BEHAVIOURS:
            raise ValueError(f"behaviour must be one of {BEHAVIOURS}")
        changed_conn = any(config.get(k) != self._cfg.get(k) for k in ("server_url", "token_file", "workspace", "client_id_prefix"))
        self._cfg = dict(config)
        if changed_conn and self._server is not None:
            await self._disconnect()
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._loop())

    @property
    def client_id(self) -> str:
        return f"{self._cfg['client_id_prefix']}-{hashlib.sha1(self._app.encode('utf-8')).hexdigest()[:8]}"

    async def _connect(self):
        from hypha_rpc import connect_to_server

        cfg = {"server_url": self._cfg["server_url"], "client_id": self.client_id}
        if self._cfg.get("token_file"):
            with open(self._cfg["token_file"], encoding="utf-8") as f:
                cfg["token"] = f.read().strip()
        if self._cfg.get("workspace"):
            cfg["workspace"] = self._cfg["workspace"]
        self._server = await connect_to_server(cfg)
        log.info("connected to Hypha as %s", self.client_id)

    async def _disconnect(self) -> None:
        server, self._server = self._server, None
        self._registered = False
        if server is not None:
            try:
                await server.disconnect()
            except Exception:  # noqa: BLE001 - best effort
                pass

    async def _register(self) -> None:
        if self._server is None:
            await self._connect()
        info = await self._server.register_service(
            {
                "id": self._app,
                "name": self._app,
                "type": "bioengine-app",
                "config": {"visibility": "public", "require_context": True},
                "get_load": lambda context=None: 0.0,
                "ping": lambda context=None: "pong",
            },
            {"overwrite": True},
        )
        self._registered = True
        log.info("registered Hypha service %s", info["id"])

    async def _deregister(self, why: str) -> None:
        if self._server is not None and self._registered:
            try:
                await self._server.unregister_service(self._app)
            except Exception as e:  # noqa: BLE001
                log.warning("unregister failed: %s", e)
        self._registered = False
        log.info("deregistered Hypha service of %s: %s", self._app, why)

    def _sibling_states(self) -> Optional[Dict[str, Tuple[int, str]]]:
        """(RUNNING replicas, status) per non-proxy deployment; None when unknown."""
        try:
            app = serve.status().applications.get(self._app)
        except Exception:  # noqa: BLE001 - controller mid-restart
            return None
        if app is None:
            return None
        out = {}
        for name, d in app.deployments.items():
            if name == "ProxyDeployment":
                continue
            running = sum(n for s, n in d.replica_states.items() if _text(s) == "RUNNING")
            out[name] = (running, _text(d.status))
        return out

    def _want_registered(self, states: Dict[str, Tuple[int, str]]) -> Tuple[bool, str]:
        behaviour = self._cfg.get("behaviour", "fixed")
        all_running = all(r > 0 for r, _ in states.values())
        serviceable = all(r > 0 or s in SERVICEABLE for r, s in states.values())
        pending = [n for n, (r, s) in states.items() if not (r > 0 or s in SERVICEABLE)]
        if behaviour == "buggy_deregister_at_zero":
            return all_running, "a sibling has no RUNNING replica"
        if behaviour == "wait_for_running" and not self._ever_ready:
            if all_running:
                self._ever_ready = True
            return all_running, "waiting for a RUNNING replica"
        return serviceable, f"not serviceable: {pending}"

    async def _loop(self) -> None:
        while True:
            try:
                states = await asyncio.get_running_loop().run_in_executor(None, self._sibling_states)
                if states is not None:
                    want, why = self._want_registered(states)
                    if want and not self._registered:
                        await self._register()
                    elif not want and self._registered:
                        await self._deregister(why)
                    elif not want:
                        log.info("⏳ Waiting for app '%s' deployments to run (pending: %s).", self._app, states)
            except Exception as e:  # noqa: BLE001 - keep trying, as the real proxy does
                log.warning("registration loop error: %s", e)
                await self._disconnect()
            await asyncio.sleep(float(self._cfg.get("poll_s", 1)))

    def check_health(self) -> None:
        # Healthy while unregistered, as BioEngine's proxy is.
        return None

    async def __call__(self, request) -> str:
        x = request.query_params.get("x", "ok")
        return await self._model.predict.remote(x)

    async def registered(self) -> bool:
        return self._registered


app = ProxyDeployment.bind(Model.bind())
