import type { Province } from './region-tree';

/** The MCA GB/T 2260 list of year-end 2024 for mainland China (SPEC 4). */
export const EXPECTED_COUNTS = { provinces: 31, cities: 342, districts: 2846 } as const;

interface Node {
  code: string;
  name: string;
}

/**
 * Every way the tree can break SPEC 4, as readable problems (empty when valid): codes of 6 digits
 * under their parent's prefix, unique codes, no name twice within one parent, code order and the counts.
 */
export function findRegionProblems(provinces: readonly Province[]): string[] {
  const problems: string[] = [];
  const seenCodes = new Set<string>();
  const counts = { provinces: 0, cities: 0, districts: 0 };

  const checkLevel = (parent: string, nodes: readonly Node[], codeShape: RegExp, prefix: string): void => {
    const names = new Set<string>();
    let previous = '';
    for (const node of nodes) {
      const where = `${parent} > ${node.code} ${node.name}`;
      if (!codeShape.test(node.code)) problems.push(`${where}: code does not have the shape ${codeShape.source}`);
      if (!node.code.startsWith(prefix)) problems.push(`${where}: code does not start with its parent's ${prefix}`);
      if (seenCodes.has(node.code)) problems.push(`${where}: code used twice`);
      if (typeof node.name !== 'string' || node.name.length === 0) problems.push(`${where}: empty name`);
      if (names.has(node.name)) problems.push(`${where}: name used twice within ${parent}`);
      if (node.code <= previous) problems.push(`${where}: not ordered by code`);
      seenCodes.add(node.code);
      names.add(node.name);
      previous = node.code;
    }
  };

  checkLevel('China', provinces, /^\d{2}0000$/, '');
  for (const province of provinces) {
    counts.provinces++;
    checkLevel(province.name, province.cities, /^\d{4}00$/, province.code.slice(0, 2));
    for (const city of province.cities) {
      counts.cities++;
      checkLevel(`${province.name} ${city.name}`, city.districts, /^\d{6}$/, city.code.slice(0, 4));
      counts.districts += city.districts.length;
    }
  }

  for (const level of ['provinces', 'cities', 'districts'] as const) {
    if (counts[level] !== EXPECTED_COUNTS[level]) problems.push(`${counts[level]} ${level}, expected ${EXPECTED_COUNTS[level]}`);
  }
  return problems;
}
