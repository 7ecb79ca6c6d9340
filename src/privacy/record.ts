/**
 * Column policies, the record side: a table's policies as rules at paths of
 * the raw record (`Email`, `patient.firstName`), and the fields `raw` may keep
 * when it keeps only the declared ones. Applied to a record as it enters
 * pmsync, before validation, mapping, quarantine or any write, so every copy
 * of it (typed columns, raw, history, quarantine, messages) is the
 * transformed one. Pure.
 */
import type { z } from 'zod';
import type { Rule } from '../config/privacy.ts';
import { applyRule, isRemoved, type Normalise, type ValueShape } from './rules.ts';

/** Fields kept when raw keeps only the declared ones: `true` keeps the whole value, a tree keeps those fields of it. */
export type DeclaredTree = Map<string, DeclaredTree | true>;

export interface PathRule {
  /** Field names from the record's top level down. */
  path: string[];
  rule: Rule;
  shape: ValueShape;
  normalise: Normalise;
}

export interface RecordPolicy {
  /** Rules other than keep, at the paths they apply to. */
  paths: PathRule[];
  /** The fields raw keeps; null keeps every field. */
  declared: DeclaredTree | null;
  key: string | null;
}

export const OPEN_POLICY: RecordPolicy = { paths: [], declared: null, key: null };

export function isOpen(p: RecordPolicy): boolean {
  return p.paths.length === 0 && p.declared === null;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * The record with every rule applied and, when raw keeps only declared fields,
 * the others removed. The input is not modified; parts no rule touches are
 * shared with it.
 */
export function transformRecord(p: RecordPolicy, record: Record<string, unknown>): Record<string, unknown> {
  // Objects made by this call: changed in place by the rules that follow (one copy per object, not per rule).
  const own = new Set<object>();
  let out: unknown = record;
  for (const r of p.paths) out = applyAt(out, r, 0, p.key, own);
  if (p.declared) out = prune(out, p.declared);
  return isPlainObject(out) ? out : {};
}

const GONE = Symbol('gone');

function applyAt(node: unknown, r: PathRule, depth: number, key: string | null, own: Set<object>): unknown {
  if (node === null || node === undefined) return node;
  if (depth === r.path.length || (!isPlainObject(node) && !Array.isArray(node))) {
    // The value itself, or a value of another shape where an object was expected
    // (`patient: "Ann Lee"`): either way it is what the rule is about.
    const v = applyRule(r.rule, node, r.shape, r.normalise, key);
    return isRemoved(v) ? GONE : v;
  }
  if (Array.isArray(node)) {
    const items = node.map((item) => applyAt(item, r, depth, key, own)).filter((item) => item !== GONE);
    own.add(items);
    return items;
  }
  const field = r.path[depth]!;
  if (!Object.hasOwn(node, field)) return node;
  const child = applyAt(node[field], r, depth + 1, key, own);
  if (child === node[field]) return node;
  const target = own.has(node) ? node : { ...node };
  own.add(target);
  if (child === GONE) delete target[field];
  else target[field] = child;
  return target;
}

function prune(node: unknown, tree: DeclaredTree): unknown {
  if (Array.isArray(node)) return node.map((item) => prune(item, tree));
  if (!isPlainObject(node)) return node;
  const out: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(node)) {
    const sub = tree.get(field);
    if (sub === undefined) continue;
    out[field] = sub === true ? value : prune(value, sub);
  }
  return out;
}

/**
 * The fields a raw schema declares, nested objects and arrays of objects
 * followed. A field whose schema is not an object (a text, a number, a union
 * of scalars) is kept whole.
 */
export function declaredFields(schema: z.ZodType): DeclaredTree | true {
  const def = (schema as unknown as { _zod: { def: ZodDef } })._zod.def;
  switch (def.type) {
    case 'object': {
      const tree: DeclaredTree = new Map();
      for (const [field, sub] of Object.entries(def.shape ?? {})) tree.set(field, declaredFields(sub));
      return tree;
    }
    case 'optional':
    case 'nullable':
    case 'default':
    case 'prefault':
    case 'readonly':
    case 'catch':
    case 'nonoptional':
      return declaredFields(def.innerType!);
    case 'pipe':
      return declaredFields(def.in!);
    case 'array':
      return declaredFields(def.element!);
    default:
      return true;
  }
}

interface ZodDef {
  type: string;
  shape?: Record<string, z.ZodType>;
  innerType?: z.ZodType;
  in?: z.ZodType;
  element?: z.ZodType;
}

/** Adds a path to a tree of declared fields (a field named by a policy, a remapped column's field). */
export function declare(tree: DeclaredTree, path: string[]): void {
  let node = tree;
  for (const [i, field] of path.entries()) {
    const sub = node.get(field);
    if (i === path.length - 1) {
      node.set(field, true);
      return;
    }
    if (sub === true) return;
    if (sub === undefined) {
      const next: DeclaredTree = new Map();
      node.set(field, next);
      node = next;
    } else node = sub;
  }
}

/** The declared fields as dotted paths, sorted: how the stored policy names them. */
export function declaredPaths(tree: DeclaredTree, prefix = ''): string[] {
  const out: string[] = [];
  for (const [field, sub] of tree) {
    const path = `${prefix}${field}`;
    if (sub === true) out.push(path);
    else {
      const inner = declaredPaths(sub, `${path}.`);
      out.push(...(inner.length > 0 ? inner : [path]));
    }
  }
  return out.sort();
}

/** A tree of declared fields from dotted paths (the inverse of declaredPaths). */
export function treeOf(paths: string[]): DeclaredTree {
  const tree: DeclaredTree = new Map();
  for (const p of paths) declare(tree, p.split('.'));
  return tree;
}
