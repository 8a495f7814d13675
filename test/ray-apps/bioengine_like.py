"""A Serve app shaped like a BioEngine app: a `ProxyDeployment` ingress that
registers the app in Hypha, and a sibling `Model` deployment that may scale to
zero.

Two upstream proxies are modelled, chosen by `behaviour` (below):

- `upstream` (default): aicell-lab/bioengine 0.16.1 (commit 03b490c,
  bioengine/apps/proxy_deployment.py), the release with the "RUNNING but not
  registered" bug.
- `fixed`: the fixed proxy of aicell-lab/bioengine 0.16.15, commit
  1a189562604ecf6c7fd2fd9c3afe6dca0bb653fb (FIXED_COMMIT below; the newest
  stored proxy_deployment.py with `_is_serviceable`, `_sibling_states` and the
  background maintenance task). Each modelled point cites its lines there.

The 0.16.1 proxy (`upstream`) in every point the exporter depends on:

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
  fixed                     BioEngine 0.16.15's fixed proxy (FIXED_COMMIT):
    - Gate in check_health, on the same 10 s health-check period (decorator L119):
      `_sibling_states()` reads (RUNNING replicas, status) per sibling from
      serve.status() (L1494-1550); a sibling is serviceable when
      `_is_serviceable(running, status)`: running > 0 or status HEALTHY /
      UPSCALING / DOWNSCALING (L92-97), so a Model idle at min_replicas 0 is
      serviceable. `None` (status unknown) never deregisters (L1611).
    - Closed: logs "⏳ Waiting for app '{id}' deployments to run (pending:
      {pending})." and returns without raising (L1600-1610). Opening: sets
      entry_deployment_ready and logs "✅ All deployments of app '{id}' are
      serviceable." (L1592-1599). Open: a once-ready sibling that is not
      serviceable logs upstream's ERROR line and deregisters (L1611-1625).
    - check_health never registers and never calls Hypha (no echo, get_service,
      get_load); it starts the background maintenance task (L1585, L1482-1489)
      and raises only for a permanent registration failure (L1579-1583).
    - The maintenance task ticks every _MAINTENANCE_TICK_S = 5 s (L55,
      L1468-1480). A tick registers when the gate is open and nothing is
      registered (L1407-1449), at most every _REREGISTER_BACKOFF_S = 30 s
      (L67, L1425-1429); a permanent error (L1381-1405) is kept for check_health,
      anything else is retried. When registered, it probes
      get_service_info(ws id) every _REACHABILITY_PROBE_INTERVAL_S = 60 s (L61,
      L1451-1466) and rebuilds the client if Hypha no longer serves it.
    - Registration itself is the same code as 0.16.1's (disconnect, reconnect
      under the same client id, ws then rtc), plus upstream's on_disconnected
      hook that only brings the probe forward by _RECONNECT_GRACE_S (L76,
      L1191-1206, L1250-1258) and a `get_usage_stats` function answering as
      upstream does without app storage (L1123-1124, L1288-1289).
    Not modelled: the BioEngineProxyActor registration reports and the usage
    ledger (no worker or app storage here), ICE rotation and peer sweeps (no
    WebRTC peers).
`poll_s` is accepted and ignored (the gate runs on the health-check period).
The token comes from a file so it never shows in the Serve config or API.
"""
import asyncio
import hashlib
import logging
import time
from typing import Dict, Optional, Tuple

from ray import serve
from ray.serve.handle import DeploymentHandle

logger = logging.getLogger("ray.serve")

UPSTREAM_ALIASES = ("upstream", "buggy_deregister_at_zero", "wait_for_running")
BEHAVIOURS = UPSTREAM_ALIASES + ("fixed",)
# bioengine/apps/proxy_deployment.py L49
MAX_CONSECUTIVE_PING_FAILURES = 3

# ----- `fixed`: aicell-lab/bioengine bioengine/apps/proxy_deployment.py at FIXED_COMMIT -----
# Version 0.16.15: pyproject.toml at FIXED_COMMIT says `version = "0.16.15"`; upstream's
# version-check CI keeps bioengine/_version.py equal to it (that file is not in the stored
# snapshot of this commit).
FIXED_COMMIT = "1a189562604ecf6c7fd2fd9c3afe6dca0bb653fb"
FIXED_VERSION = "0.16.15"
# L55: the maintenance loop's tick.
MAINTENANCE_TICK_S = 5
# L61: the reachability probe (get_service_info of our own ws service).
REACHABILITY_PROBE_INTERVAL_S = 60
# L67: spacing of registration attempts.
REREGISTER_BACKOFF_S = 30
# L76: a dropped socket brings the probe forward to now + this.
RECONNECT_GRACE_S = 30
# L81
PERMANENT_ERROR_MARKERS = ("wrong workspace",)
# L92
SERVICEABLE_AT_ZERO_REPLICAS = ("HEALTHY", "UPSCALING", "DOWNSCALING")


def _is_serviceable(running: int, status: str) -> bool:
    """L95-97: whether a sibling deployment can serve a request, now or after an upscale."""
    return running > 0 or status in SERVICEABLE_AT_ZERO_REPLICAS


class _PermanentRegistrationError(RuntimeError):
    """L84-85: registration failed for a reason no amount of retrying will fix.

    Raised only under `fixed` (FIXED_COMMIT L1242, L1247, L1306); 0.16.1 raised RuntimeError."""


def _is_permanent_registration_error(exc: BaseException) -> bool:
    """L1381-1405 (a staticmethod upstream)."""
    text = str(exc).lower()
    if "already exists" in text:
        return False
    if isinstance(exc, _PermanentRegistrationError):
        return True
    if isinstance(exc, ConnectionAbortedError):
        return True
    return any(marker in text for marker in PERMANENT_ERROR_MARKERS)


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
        # `fixed` only (FIXED_COMMIT L335-343): Hypha upkeep owned by the maintenance task.
        self._maintenance_task: Optional[asyncio.Task] = None
        self._connection_lost = False
        self._registration_failure: Optional[BaseException] = None
        self._probe_due_at = 0.0
        self._next_register_at = 0.0
        logger.info(f"🚀 Initializing ProxyDeployment for application: '{self.application_id}'")

    async def reconfigure(self, config: Dict) -> None:
        behaviour = config.get("behaviour", "upstream")
        if behaviour not in BEHAVIOURS:
            raise ValueError(f"behaviour must be one of {BEHAVIOURS}")
        self._cfg = dict(config)

    @property
    def _fixed(self) -> bool:
        return self._cfg.get("behaviour", "upstream") == "fixed"

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
        self._connection_lost = False  # FIXED_COMMIT L1189

    def _on_connection_lost(self, reason: str) -> None:
        """FIXED_COMMIT L1191-1206: synchronous; only reschedules the reachability probe."""
        logger.warning(f"🔌 Hypha connection closed for '{self.application_id}': {reason}. Probing in {RECONNECT_GRACE_S}s.")
        self._probe_due_at = time.time() + RECONNECT_GRACE_S

    async def _register_services(self) -> None:
        from hypha_rpc import connect_to_server

        # Upstream releases the client id before every registration, so a
        # re-registration is a disconnect followed by a connect under the same id.
        await self._reset_server_connection()
        # 0.16.1 raises RuntimeError for the id checks below, FIXED_COMMIT _PermanentRegistrationError.
        mismatch = _PermanentRegistrationError if self._fixed else RuntimeError
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
                raise mismatch(f"Workspace mismatch: expected '{self._cfg['workspace']}', got '{workspace}'")
            registered_client_id = self.server["config"]["client_id"]
            if registered_client_id != self.client_id:
                raise mismatch(f"Client ID mismatch: expected '{self.client_id}', got '{registered_client_id}'")
            if self._fixed:
                # FIXED_COMMIT L1250-1258: hypha-rpc's disconnect hook only brings the probe forward.
                try:
                    self.server.rpc._connection.on_disconnected(self._on_connection_lost)
                except Exception as e:  # noqa: BLE001 - upstream only warns
                    logger.warning(f"⚠️ Could not attach the Hypha disconnect hook for '{self.application_id}': {e}")
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
        if self._fixed:
            # FIXED_COMMIT L1288-1289, L1123-1124: no durable app storage here, so upstream's answer.
            functions["get_usage_stats"] = lambda context=None: {"available": False, "reason": "no durable application storage"}
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
                raise mismatch(f"Service ID mismatch: expected '{self.websocket_service_id}', got '{info['id']}'")
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

    # ----- the gate (0.16.1 _sibling_running_counts / FIXED_COMMIT _sibling_states, check_health) -----

    def _sibling_states(self) -> Optional[Dict[str, Tuple[int, str]]]:
        """(RUNNING replicas, status) per non-proxy deployment; None when unknown.

        FIXED_COMMIT L1494-1550 (`_sibling_states`: serve.status() L1518, RUNNING count L1525-1529,
        status L1530, dead cached client dropped and retried L1534-1541, None on failure L1546-1550);
        0.16.1's `_sibling_running_counts` uses the count only. Run in an executor, as upstream."""

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
        # 0.16.1: only a RUNNING replica counts (the status is ignored).
        return running > 0

    async def check_health(self) -> None:
        if self._fixed:
            await self._check_health_fixed()
            return
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

    # ----- `fixed`: FIXED_COMMIT check_health and the background maintenance task -----

    async def _check_health_fixed(self) -> None:
        """FIXED_COMMIT L1552-1656. Reads local state and Serve's status only; never calls Hypha."""
        # L1579-1583: the only Hypha-related failure is a permanent registration error.
        if self._registration_failure is not None:
            raise RuntimeError(
                f"Hypha service registration for '{self.application_id}' failed permanently: {self._registration_failure}"
            ) from self._registration_failure

        # L1585: registration belongs to the background task, started (or restarted) here.
        self._ensure_maintenance_task()

        # L1590
        states = await asyncio.get_running_loop().run_in_executor(None, self._sibling_states)

        if not self.entry_deployment_ready:
            # L1592-1599: the gate opens once every sibling is serviceable.
            if states and all(_is_serviceable(*st) for st in states.values()):
                self.entry_deployment_ready = True
                for dep in states:
                    self._dep_seen_ready[dep] = True
                logger.info(f"✅ All deployments of app '{self.application_id}' are serviceable.")
            else:
                # L1600-1610: closed; healthy to Serve, nothing registered.
                pending = [dep for dep, st in states.items() if not _is_serviceable(*st)] if states else "unknown"
                logger.info(f"⏳ Waiting for app '{self.application_id}' deployments to run (pending: {pending}).")
                return
        elif states is not None:
            # L1611-1625: a once-ready sibling that is no longer serviceable deregisters and
            # re-gates; an unknown reading (None) never does.
            for dep, (running, status) in states.items():
                if _is_serviceable(running, status):
                    self._dep_seen_ready[dep] = True
                elif self._dep_seen_ready.get(dep):
                    logger.error(
                        f"❌ Deployment '{dep}' of app '{self.application_id}' has no RUNNING replica and is not "
                        f"serviceable (status: {status}). Deregistering Hypha service until it recovers."
                    )
                    await self._deregister_services()
                    return
        # L1627-1653: ICE rotation and the peer sweep have nothing to do here (no WebRTC peers).

    async def _maintenance_tick(self) -> None:
        """FIXED_COMMIT L1407-1466: one pass of connection upkeep. Never raises."""
        # L1416-1419: check_health owns the gate.
        if not self.entry_deployment_ready:
            return

        needs_registration = self.server is None or self.websocket_service_id is None or self._connection_lost
        if needs_registration:
            # L1425-1449: at most one attempt per REREGISTER_BACKOFF_S.
            now = time.time()
            if now < self._next_register_at:
                return
            self._next_register_at = now + REREGISTER_BACKOFF_S
            async with self._registration_lock:
                try:
                    await self._register_services()
                    self._connection_lost = False
                    self._probe_due_at = time.time() + REACHABILITY_PROBE_INTERVAL_S
                    self._next_register_at = 0.0
                except Exception as e:  # noqa: BLE001 - classified as upstream
                    if _is_permanent_registration_error(e):
                        logger.error(
                            f"❌ Hypha registration for '{self.application_id}' failed permanently and will not be retried: {e}"
                        )
                        self._registration_failure = e
                    else:
                        logger.warning(
                            f"⚠️ Hypha registration for '{self.application_id}' failed; retrying in {REREGISTER_BACKOFF_S}s: {e}"
                        )
            return

        # L1451-1466: ask Hypha whether it still serves our service, every REACHABILITY_PROBE_INTERVAL_S.
        if time.time() < self._probe_due_at:
            return
        try:
            await self.server.get_service_info(self.websocket_service_id)
            self._probe_due_at = time.time() + REACHABILITY_PROBE_INTERVAL_S
        except Exception as e:  # noqa: BLE001
            logger.warning(f"⚠️ Hypha no longer serves '{self.websocket_service_id}'; rebuilding the client: {e}")
            self._connection_lost = True

    async def _maintenance_loop(self) -> None:
        """FIXED_COMMIT L1468-1480."""
        while True:
            try:
                await self._maintenance_tick()
            except asyncio.CancelledError:
                raise
            except Exception as e:  # noqa: BLE001
                logger.warning(f"⚠️ Hypha maintenance tick raised for '{self.application_id}': {e}")
            if self._registration_failure is not None:
                return
            await asyncio.sleep(MAINTENANCE_TICK_S)

    def _ensure_maintenance_task(self) -> None:
        """FIXED_COMMIT L1482-1489: start the loop, or restart it if it ever exited."""
        if self._maintenance_task is None or self._maintenance_task.done():
            if self._registration_failure is not None:
                return
            self._maintenance_task = asyncio.get_event_loop().create_task(self._maintenance_loop())

    async def __del__(self) -> None:
        # FIXED_COMMIT L1667-1669: the maintenance task stops first (None under 0.16.1).
        if self._maintenance_task is not None:
            self._maintenance_task.cancel()
            self._maintenance_task = None
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
