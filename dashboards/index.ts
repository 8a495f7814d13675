// The dashboards of the pack and the file each is written to under dashboards/json/.
import type { Dashboard } from '@grafana/grafana-foundation-sdk/dashboard';
import * as exporterHealth from './exporter-health';
import * as overview from './overview';
import * as serviceIdentity from './service-identity';

export interface DashboardSource {
  uid: string;
  /** File name under dashboards/json/. */
  file: string;
  build(): Dashboard;
}

export const DASHBOARDS: readonly DashboardSource[] = [
  { uid: overview.UID, file: 'serve-hypha-overview.json', build: overview.build },
  { uid: serviceIdentity.UID, file: 'service-identity.json', build: serviceIdentity.build },
  { uid: exporterHealth.UID, file: 'exporter-health.json', build: exporterHealth.build },
];
