/**
 * Field schemas shared by the Pro mappers. Pro ids are integers (the spec says
 * so); they are stored as bigint and must be exact, so ids beyond JavaScript's
 * safe integer range are refused rather than silently rounded.
 */
import { z } from 'zod';

export const proId = z.number().int().positive().max(Number.MAX_SAFE_INTEGER);
export const optProId = proId.nullish();
