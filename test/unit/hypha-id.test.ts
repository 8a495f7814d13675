import { clientIdOf, parseServiceId, splitWorkspace } from '../../src/util/hypha-id';

describe('Hypha ids (one parser for every shape)', () => {
  it('parses "ws/client:svc", dropping an @app suffix, and refuses other shapes', () => {
    expect(parseServiceId('ws/client:svc')).toEqual({ workspace: 'ws', clientId: 'client', serviceId: 'svc' });
    expect(parseServiceId('public/wk-1:artifact-manager@hypha-apps')).toEqual({ workspace: 'public', clientId: 'wk-1', serviceId: 'artifact-manager' });
    expect(parseServiceId('ws/*:app')).toEqual({ workspace: 'ws', clientId: '*', serviceId: 'app' });
    for (const bad of ['no-slash:svc', '/client:svc', 'ws/:svc', 'ws/client:', 'ws/client', 'ws/']) expect(parseServiceId(bad)).toBeUndefined();
  });

  it('splits a workspace off a reference, and reduces any id to its client', () => {
    expect(splitWorkspace('public/artifact-manager')).toEqual({ workspace: 'public', rest: 'artifact-manager' });
    expect(splitWorkspace('bare')).toEqual({ rest: 'bare' });
    expect(['ws/client:svc', 'ws/client', 'client', ' ws/client:svc@app '].map(clientIdOf)).toEqual(['client', 'client', 'client', 'client']);
    expect(clientIdOf('ws/')).toBeUndefined();
    expect(clientIdOf('x'.repeat(300))).toBeUndefined();
  });
});
