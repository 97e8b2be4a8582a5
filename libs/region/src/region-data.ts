import regionDataFile from '../data/regions.json';
import type { Province, RegionDataFile } from './region-tree';

/** The committed GB/T 2260 data (written by `npm run regions:build`), ordered by code at every level. */
export const REGION_PROVINCES: readonly Province[] = (regionDataFile as RegionDataFile).provinces;
