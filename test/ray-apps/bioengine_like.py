"""A Serve app shaped like a BioEngine app: a `ProxyDeployment` ingress that
registers the app in Hypha, and a sibling `Model` deployment that may scale to
zero.

The proxy follows aicell-lab/bioengine 0.16.1 (commit 03b490c,
bioengine/apps/proxy_deployment.py) in every point the exporter depends on:

- Registration is decided in `check_health`, which Serve calls every
  `health_check_period_s` (10 s in upstream's decorator; bioengine-like.yaml
  sets the same). Nothing registers between two health checks.
- Gate: the service is registered only once every sibling deployment has a
  RUNNING replica. An app whose sibling starts at 0 replicas is never
  registered until something wakes the sibling.
- Once open, a sibling that was seen RUNNING and now has no RUNNING replica
  deregisters the service (ws and `-rtc`) and closes the gate again; the Hypha
  connection stays open until the next registration.
- Each registration first disconnects, then reconnects under the same client
  id `{worker_client_id}-{sha1(app)[:8]}`.
- `{app}-rtc` is registered next to the main service, as hypha-rpc's
  `register_rtc_service` does (no type, so Hypha reports `generic`; public).
  Upstream installs aiortc in the proxy's runtime_env, so production proxies
  register it: `rtc: true` is the default. `rtc: false` is a proxy without
  aiortc: the registration fails with hypha-rpc's assertion and upstream logs
  a warning and carries on without it.
- The log lines are upstream's, character for character, for the gate, the
  deregistration and the registration steps.
- No `__call__`: an HTTP request through Serve's route fails (500), as it does
  for real BioEngine apps. Calls reach the Model only through the registered
  Hypha service (`predict`) or a DeploymentHandle.
- A permanent Hypha failure (3 consecutive failed pings) and a failing check
  of its own service make the health check raise, so Serve replaces the
  replica, exactly as upstream.

user_config keys: server_url, token_file, workspace (optional), client_id_prefix
(the worker's client id), rtc (default true), behaviour:
  upstream                  BioEngine 0.16.1 as above (default)
  buggy_deregister_at_zero  the same (older name used by tests: the rule that
                            deregisters an app idle at zero)
  wait_for_running          the same (older name: deployed at 0, never registers)
  fixed                     HYPOTHETICAL, in no BioEngine release or branch: a
                            sibling also counts as serviceable when Serve calls it
                            HEALTHY/UPSCALING/DOWNSCALING at zero replicas. Kept so
                            tests can show an app registered while idle at zero.
`poll_s` is accepted and ignored (the gate runs on the health-check period).
The token comes from a file so it never shows in the Serve config or API.
"""
import asyncio
import hashlib
import logging
from typing import Dict, Optional, Tuple

from ray import serve
from ray.serve.handle import DeploymentHandle

logger = logging.getLogger("ray.serve")

SERVICEABLE = ("HEALTHY", "UPSCALING", "DOWNSCALING")
UPSTREAM_ALIASES = ("upstream", "buggy_deregister_at_zero", "wait_for_running")
BEHAVIOURS = UPSTREAM_ALIASES + ("fixed",)
# bioengine/apps/proxy_deployment.py L49
MAX_CONSECUTIVE_PING_FAILURES = 3
# The message of hypha-rpc's `register_rtc_service` assertion without aiortc.
NO_AIORTC = "aiortc is not installed, please install it via `pip install aiortc` to use webrtc services."


def _text(v) -> str:
    return str(getattr(v, "value", v))


@serve.deployment
class Model:
    def predict(self, x: str) -> str:
        return f"predicted:{x}"


@serve.deployment
class ProxyDeployment:
    def __init__(self, model: DeploymentHandle) -> None:
        self.entry_deployment_handle = model
        self.application_id = serve.get_replica_context().app_name
        self._cfg: Dict = {}
        self.server = None
        self.websocket_service_id: Optional[str] = None
        self.rtc_service_id: Optional[str] = None
        self.entry_deployment_ready = False
        self._dep_seen_ready: Dict[str, bool] = {}
        self._consecutive_ping_failures = 0
        self._registration_lock = asyncio.Lock()
        logger.info(f"🚀 Initializing ProxyDeployment for application: '{self.application_id}'")

    async def reconfigure(self, config: Dict) -> None:
        behaviour = config.get("behaviour", "upstream")
        if behaviour not in BEHAVIOURS:
            raise ValueError(f"behaviour must be one of {BEHAVIOURS}")
        self._cfg = dict(config)

    @property
    def client_id(self) -> str:
        app_hash = hashlib.sha1(self.application_id.encode("utf-8")).hexdigest()[:8]
        return f"{self._cfg['client_id_prefix']}-{app_hash}"

    # ----- Hypha registration (upstream _register_services / _deregister_services) -----

    async def _reset_server_connection(self) -> None:
        if self.server is not None:
            try:
                await asyncio.wait_for(self.server.disconnect(), timeout=2.0)
            except Exception as e:  # noqa: BLE001 - upstream only warns
                logger.warning(f"⚠️ Disconnect during connection reset failed for '{self.application_id}': {e}")
        self.server = None
        self._consecutive_ping_failures = 0

    async def _register_services(self) -> None:
        from hypha_rpc import connect_to_server

        # Upstream releases the client id before every registration, so a
        # re-registration is a disconnect followed by a connect under the same id.
        await self._reset_server_connection()
        cfg = {"server_url": self._cfg["server_url"], "client_id": self.client_id}
        if self._cfg.get("token_file"):
            with open(self._cfg["token_file"], encoding="utf-8") as f:
                cfg["token"] = f.read().strip()
        if self._cfg.get("workspace"):
            cfg["workspace"] = self._cfg["workspace"]
        try:
            self.server = await connect_to_server(cfg)
            workspace = self.server["config"]["workspace"]
            if self._cfg.get("workspace") and workspace != self._cfg["workspace"]:
                raise RuntimeError(f"Workspace mismatch: expected '{self._cfg['workspace']}', got '{workspace}'")
            registered_client_id = self.server["config"]["client_id"]
            if registered_client_id != self.client_id:
                raise RuntimeError(f"Client ID mismatch: expected '{self.client_id}', got '{registered_client_id}'")
            logger.info(f"✅ Successfully connected to Hypha server as client '{self.client_id}' for '{self.application_id}'")
        except Exception as e:
            self.server = None
            logger.error(f"❌ Error connecting to Hypha server for '{self.application_id}': {e}")
            raise

        async def predict(x: str = "ok", context=None):
            return await self.entry_deployment_handle.predict.remote(x)

        functions = {
            "predict": predict,
            "get_load": lambda context=None: 0.0,
            "get_num_pcs": lambda context=None: 0,
            "get_rtc_service_id": lambda context=None: self.rtc_service_id,
        }
        try:
            info = await self.server.register_service(
                {
                    "id": self.application_id,
                    "name": self.application_id,
                    "description": "BioEngine-like test app",
                    "type": "bioengine-app",
                    "config": {"visibility": "public", "require_context": True},
                    **functions,
                }
            )
            self.websocket_service_id = f"{workspace}/{self.client_id}:{self.application_id}"
            if info["id"] != self.websocket_service_id:
                raise RuntimeError(f"Service ID mismatch: expected '{self.websocket_service_id}', got '{info['id']}'")
            logger.info(
                f"✅ Successfully registered WebSocket service for '{self.application_id}' with ID: {self.websocket_service_id}"
            )
        except Exception as e:
            logger.error(f"❌ Error registering WebSocket service for '{self.application_id}': {e}")
            raise

        try:
            if not self._cfg.get("rtc", True):
                raise AssertionError(NO_AIORTC)

            async def offer(*args, context=None, **kwargs):
                raise RuntimeError("WebRTC offers are not served by the test stand-in")

            # The record register_rtc_service(server, service_id=f"{app}-rtc",
            # config={"visibility": "public", "require_context": True, ...}) creates.
            rtc_info = await self.server.register_service(
                {
                    "id": f"{self.application_id}-rtc",
                    "config": {"visibility": "public", "require_context": True},
                    "offer": offer,
                }
            )
            self.rtc_service_id = f"{workspace}/{self.client_id}:{self.application_id}-rtc"
            if rtc_info["id"] != self.rtc_service_id:
                raise RuntimeError(f"RTC Service ID mismatch: expected '{self.rtc_service_id}', got '{rtc_info['id']}'")
            logger.info(f"✅ Registered WebRTC service for '{self.application_id}' with ID: {self.rtc_service_id}")
        except Exception as e:  # noqa: BLE001 - optional, as upstream
            logger.warning(f"⚠️ Warning: Failed to register WebRTC service for '{self.application_id}': {e}")
        logger.info(f"📋 Service functions registered: {list(functions.keys())}")

    async def _deregister_services(self) -> None:
        if self.server is not None:
            for svc_id, name in ((self.websocket_service_id, "WebSocket"), (self.rtc_service_id, "WebRTC")):
                if svc_id:
                    try:
                        await self.server.unregister_service(svc_id)
                        logger.info(f"🔌 Unregistered {name} service '{svc_id}' for '{self.application_id}'")
                    except Exception as e:  # noqa: BLE001
                        logger.warning(f"⚠️ Failed to unregister {name} service '{svc_id}': {e}")
        self.websocket_service_id = None
        self.rtc_service_id = None
        self.entry_deployment_ready = False

    # ----- the gate (upstream _sibling_running_counts / check_health) -----

    def _sibling_states(self) -> Optional[Dict[str, Tuple[int, str]]]:
        """(RUNNING replicas, status) per non-proxy deployment; None when unknown."""

        def query():
            app = serve.status().applications.get(self.application_id)
            if app is None:
                return None
            out = {}
            for name, d in app.deployments.items():
                if name == "ProxyDeployment":
                    continue
                running = sum(n for s, n in d.replica_states.items() if _text(s) == "RUNNING")
                out[name] = (running, _text(d.status))
            return out

        try:
            return query()
        except Exception:  # noqa: BLE001 - a restarted controller leaves a dead cached client
            try:
                serve.context._set_global_client(None)
                return query()
            except Exception:  # noqa: BLE001
                return None

    def _ready(self, running: int, status: str) -> bool:
        if self._cfg.get("behaviour", "upstream") == "fixed":
            return running > 0 or status in SERVICEABLE
        return running > 0

    async def check_health(self) -> None:
        states = await asyncio.get_running_loop().run_in_executor(None, self._sibling_states)
        counts = None if states is None else {d: int(self._ready(r, s)) for d, (r, s) in states.items()}

        if not self.entry_deployment_ready:
            if counts and all(ready > 0 for ready in counts.values()):
                self.entry_deployment_ready = True
                for dep in counts:
                    self._dep_seen_ready[dep] = True
                logger.info(f"✅ All deployments of app '{self.application_id}' are RUNNING.")
            else:
                pending = [dep for dep, ready in counts.items() if ready == 0] if counts else "unknown"
                logger.info(f"⏳ Waiting for app '{self.application_id}' deployments to run (pending: {pending}).")
                return
        elif counts is not None:
            for dep, ready in counts.items():
                if ready > 0:
                    self._dep_seen_ready[dep] = True
                elif self._dep_seen_ready.get(dep):
                    logger.error(
                        f"❌ Deployment '{dep}' of app '{self.application_id}' has no RUNNING replica. "
                        f"Deregistering Hypha service until it recovers."
                    )
                    await self._deregister_services()
                    return

        if self.server is None or not self.websocket_service_id:
            async with self._registration_lock:
                if self.server is None or not self.websocket_service_id:
                    await self._register_services()

        try:
            await self.server.echo("ping")
            if self._consecutive_ping_failures:
                logger.info(
                    f"✅ Hypha ping recovered for '{self.application_id}' after "
                    f"{self._consecutive_ping_failures} transient failure(s)."
                )
                self._consecutive_ping_failures = 0
        except Exception as e:
            self._consecutive_ping_failures += 1
            if self._consecutive_ping_failures < MAX_CONSECUTIVE_PING_FAILURES:
                logger.warning(
                    f"⚠️ Hypha ping failed ({self._consecutive_ping_failures}/{MAX_CONSECUTIVE_PING_FAILURES}) for "
                    f"'{self.application_id}' — likely bridge tail latency, keeping replica healthy: {e}"
                )
                return
            logger.error(
                f"❌ Hypha ping failed {self._consecutive_ping_failures} times consecutively for "
                f"'{self.application_id}'; resetting the connection: {e}"
            )
            await self._reset_server_connection()
            raise RuntimeError("Hypha server connection failed") from e

        try:
            svc = await self.server.get_service(self.websocket_service_id)
            await svc.get_load()
            await svc.get_num_pcs()
        except Exception as e:
            logger.error(f"❌ WebSocket service connection failed for '{self.application_id}': {e}")
            self.websocket_service_id = None
            raise RuntimeError("WebSocket service connection failed")

    async def __del__(self) -> None:
        try:
            await self._deregister_services()
        except Exception as e:  # noqa: BLE001
            logger.warning(f"⚠️ __del__ deregister failed: {e}")
        had_server = self.server is not None
        await self._reset_server_connection()
        if had_server:
            logger.info(f"👋 Disconnected Hypha client '{self.client_id}' on replica shutdown.")

    async def get_app_data(self) -> Dict:
        """Like upstream's handle-only method: reachable through a DeploymentHandle, not Hypha."""
        return {"application_id": self.application_id}


app = ProxyDeployment.bind(Model.bind())
