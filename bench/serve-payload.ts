/** A synthetic ServeInstanceDetails of the shape Ray 2.60 returns (see test/fixtures/ray/). */
export function servePayload(apps: number, deploymentsPerApp = 3, replicasPerDeployment = 2, seed = 0): unknown {
  const applications: Record<string, unknown> = {};
  for (let a = 0; a < apps; a++) {
    const name = `app-${seed}-${a}`;
    const deployments: Record<string, unknown> = {};
    for (let d = 0; d < deploymentsPerApp; d++) {
      const auto = d === deploymentsPerApp - 1;
      const n = auto && a % 3 === 0 ? 0 : replicasPerDeployment;
      deployments[`Dep${d}`] = {
        name: `Dep${d}`,
        status: 'HEALTHY',
        status_trigger: auto && n === 0 ? 'DOWNSCALE_COMPLETED' : 'CONFIG_UPDATE_COMPLETED',
        message: '',
        deployment_config: auto
          ? { name: `Dep${d}`, max_ongoing_requests: 5, autoscaling_config: { min_replicas: 0, max_replicas: 4, target_ongoing_requests: 1 }, ray_actor_options: { num_cpus: 0.1 } }
          : { name: `Dep${d}`, max_ongoing_requests: 5, num_replicas: n, ray_actor_options: { num_cpus: 0.1 } },
        target_num_replicas: n,
        required_resources: { CPU: 0.1 },
        replicas: Array.from({ length: n }, (_, r) => ({
          node_id: 'n1', node_ip: '127.0.0.1', actor_id: `act${a}${d}${r}`, actor_name: `SERVE_REPLICA::${name}#Dep${d}#r${r}`,
          worker_id: 'w', log_file_path: '/x.log', replica_id: `r${r}`, state: 'RUNNING', pid: 1000 + r, start_time_s: 1790000000,
        })),
      };
    }
    applications[name] = {
      name, route_prefix: `/${name}`, docs_path: null, status: 'RUNNING', message: '', last_deployed_time_s: 1790000000,
      deployed_app_config: { name, route_prefix: `/${name}`, import_path: 'app:app' }, source: 'declarative', deployments,
    };
  }
  return {
    controller_info: { node_id: 'n1', node_ip: '127.0.0.1', actor_id: 'a', actor_name: 'SERVE_CONTROLLER_ACTOR', worker_id: 'w', log_file_path: '/c.log' },
    proxy_location: 'HeadOnly', http_options: { host: '127.0.0.1', port: 8000 }, grpc_options: { port: 9000, grpc_servicer_functions: [] },
    proxies: { n1: { node_id: 'n1', node_ip: '127.0.0.1', actor_id: 'p', actor_name: 'SERVE_PROXY', worker_id: 'w', log_file_path: '/p.log', status: 'HEALTHY' } },
    applications, target_capacity: null,
  };
}
