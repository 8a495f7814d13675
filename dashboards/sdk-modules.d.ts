// The repo compiles with moduleResolution "node", which ignores package.json "exports", so the
// SDK's subpath entry points (resolved by Node and jest at run time) need their types mapped
// to the files under dist/ by hand.
declare module '@grafana/grafana-foundation-sdk/cog' {
  export * from '@grafana/grafana-foundation-sdk/dist/cog';
}
declare module '@grafana/grafana-foundation-sdk/common' {
  export * from '@grafana/grafana-foundation-sdk/dist/common';
}
declare module '@grafana/grafana-foundation-sdk/dashboard' {
  export * from '@grafana/grafana-foundation-sdk/dist/dashboard';
}
declare module '@grafana/grafana-foundation-sdk/prometheus' {
  export * from '@grafana/grafana-foundation-sdk/dist/prometheus';
}
declare module '@grafana/grafana-foundation-sdk/table' {
  export * from '@grafana/grafana-foundation-sdk/dist/table';
}
declare module '@grafana/grafana-foundation-sdk/stat' {
  export * from '@grafana/grafana-foundation-sdk/dist/stat';
}
declare module '@grafana/grafana-foundation-sdk/timeseries' {
  export * from '@grafana/grafana-foundation-sdk/dist/timeseries';
}
declare module '@grafana/grafana-foundation-sdk/statetimeline' {
  export * from '@grafana/grafana-foundation-sdk/dist/statetimeline';
}
declare module '@grafana/grafana-foundation-sdk/heatmap' {
  export * from '@grafana/grafana-foundation-sdk/dist/heatmap';
}
