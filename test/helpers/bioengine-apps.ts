import { rayAppConfig, ServeAppConfig } from '../harness/ray';

export const BIOENGINE_PREFIX = 'e2e-worker';

/**
 * A BioEngine-shaped Serve app (test/ray-apps/bioengine_like.py): a ProxyDeployment that
 * registers `{ws}/{prefix}-{sha1(app)[:8]}:{app}` in Hypha with the given behaviour, and a
 * Model deployment autoscaling with min_replicas 0 (initialReplicas null: deployed at 0).
 */
export function bioengineApp(o: { name: string; behaviour: 'buggy_deregister_at_zero' | 'fixed' | 'wait_for_running'; hyphaUrl: string; tokenFile: string; initialReplicas: number | null; downscaleDelayS?: number }): ServeAppConfig {
  const base = rayAppConfig('bioengine-like.yaml').applications[0];
  const deployments = (base.deployments ?? []).map((d) => {
    if (d.name === 'ProxyDeployment') {
      return { ...d, user_config: { behaviour: o.behaviour, poll_s: 1, server_url: o.hyphaUrl, token_file: o.tokenFile, client_id_prefix: BIOENGINE_PREFIX } };
    }
    const delay = o.downscaleDelayS ?? 2;
    const ac: Record<string, unknown> = { ...(d.autoscaling_config as Record<string, unknown>), downscale_delay_s: delay, downscale_to_zero_delay_s: delay };
    if (o.initialReplicas === null) delete ac.initial_replicas;
    else ac.initial_replicas = o.initialReplicas;
    return { ...d, autoscaling_config: ac };
  });
  return { ...base, name: o.name, route_prefix: `/${o.name}`, deployments };
}
