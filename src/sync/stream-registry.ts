/**
 * The streams as the configuration's checks see them. The entry point hands
 * this to loadConfig: the configuration is checked against the streams
 * without importing them, so it sits below the code it configures.
 */
import type { StreamRegistry } from '../config/checks.ts';
import { checkPrivacyColumns, checkSourcePrivacy } from './privacy.ts';
import { resourceNames } from './streams/index.ts';
import { checkTableSettings, tableStreams } from './table-settings.ts';

export const STREAM_REGISTRY: StreamRegistry = {
  resourceNames,
  tableProblems: checkTableSettings,
  privacyColumnProblems: (columns, where, source) => checkPrivacyColumns(columns, where, source && tableStreams(source)),
  sourcePrivacyProblems: (source) => checkSourcePrivacy(source, tableStreams(source)),
};
