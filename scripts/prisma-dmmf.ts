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
  isId: boolean;
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

export function readModels(schemaText: string): DmmfModel[] {
  const dmmf = JSON.parse(wasm.get_dmmf(JSON.stringify({ prismaSchema: [['schema.prisma', schemaText]] }))) as {
    datamodel: { models: DmmfModel[] };
  };
  return dmmf.datamodel.models;
}
