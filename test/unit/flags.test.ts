import { FlagError, parseFlags, parseListenAddress, usage } from '../../src/cli/flags';

describe('flags', () => {
  it('defaults', () => {
    expect(parseFlags([])).toEqual({ configFile: 'hypha-serve-exporter.yml', listenAddress: ':9731', logLevel: 'info', help: false, version: false, configCheck: false,
      webHeaderTimeoutMs: 10_000, webMaxConnections: 1024,
    });
  });
  it('accepts --name=value and --name value', () => {
    const f = parseFlags(['--config.file=a.yml', '--web.listen-address', '127.0.0.1:1234', '--log.level=debug', '--version']);
    expect(f).toMatchObject({ configFile: 'a.yml', listenAddress: '127.0.0.1:1234', logLevel: 'debug', version: true });
  });
  it.each([
    [['--nope'], /unknown flag --nope/],
    [['stray'], /unexpected argument/],
    [['--log.level=trace'], /log\.level/],
    [['--config.file'], /needs a value/],
    [['--web.listen-address=9731'], /not \[host\]:port/],
    [['--web.listen-address=:99999'], /out of range/],
    [['--web.header-timeout=0s'], /web\.header-timeout: "0s" is not a positive duration/],
    [['--web.max-connections=0'], /web\.max-connections: "0" is not a positive whole number/],
  ])('rejects %j', (argv, re) => {
    expect(() => parseFlags(argv as string[])).toThrow(FlagError);
    expect(() => parseFlags(argv as string[])).toThrow(re as RegExp);
  });
  it('parses listen addresses', () => {
    expect(parseListenAddress(':9731')).toEqual({ host: undefined, port: 9731 });
    expect(parseListenAddress('[::1]:80')).toEqual({ host: '::1', port: 80 });
    expect(parseListenAddress('127.0.0.1:0')).toEqual({ host: '127.0.0.1', port: 0 });
  });
  it('documents every flag in --help', () => {
    for (const f of ['--config.file', '--web.listen-address', '--log.level', '--help', '--version']) expect(usage()).toContain(f);
  });
});
