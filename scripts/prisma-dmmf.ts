/**
 * prisma/schema.prisma parsed by Prisma's own schema engine (WebAssembly, works
 * offline): used by the table dictionary and by the schema/migration agreement test.
 */
import wasm from '@prisma/prisma-schema-wasm';

export interface DmmfField {
  name: string;
  dbName?: string | null;
  kind: string;
  type: string;
  isRequired: boolean;
  /** A scalar list (`String[]`). */
  isList?: boolean;
  isId: boolean;
  hasDefaultValue?: boolean;
  default?: unknown;
  nativeType?: [string, string[]] | null;
  documentation?: string;
}

export interface DmmfModel {
  name: string;
  dbName: string | null;
  schema: string | null;
  fields: DmmfField[];
  primaryKey: { fields: string[] } | null;
  documentation?: string;
}

export interface DmmfIndex {
  model: string;
  type: 'id' | 'normal' | 'unique' | 'fulltext';
  fields: Array<{ name: string }>;
}

export interface Datamodel {
  models: DmmfModel[];
  indexes: DmmfIndex[];
}

export function readDatamodel(schemaText: string): Datamodel {
  const dmmf = JSON.parse(wasm.get_dmmf(JSON.stringify({ prismaSchema: [['schema.prisma', schemaText]] }))) as { datamodel: Datamodel };
  return dmmf.datamodel;
}

export function readModels(schemaText: string): DmmfModel[] {
  return readDatamodel(schemaText).models;
}
