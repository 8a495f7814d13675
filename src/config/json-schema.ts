import { z } from 'zod';
import { configSchema } from './schema';

/** The config file's JSON Schema, published for editors (yaml-language-server). */
export function configJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(configSchema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  return { ...schema, title: 'hypha-serve-exporter configuration', $id: 'https://hypha-serve-exporter/config.schema.json' };
}
