import { REGION_PROVINCES } from './region-data';
import type { Province } from './region-tree';
import { findRegionProblems } from './region-validation';

const committed = REGION_PROVINCES;

describe('findRegionProblems', () => {
  it('finds none in the committed data file, which has the MCA 2024 counts', () => {
    expect(findRegionProblems(committed)).toEqual([]);
    const cities = committed.flatMap((p) => p.cities);
    expect([committed.length, cities.length, cities.flatMap((c) => c.districts).length]).toEqual([31, 342, 2846]);
  });

  // Each case breaks one copy of the committed tree in one way; the build must refuse it.
  const broken = (change: (provinces: Province[]) => void): string[] => {
    const copy = structuredClone(committed) as Province[];
    change(copy);
    return findRegionProblems(copy);
  };

  it.each<[string, (provinces: Province[]) => void, RegExp]>([
    ['a code of 5 digits', (p) => (p[0].cities[0].districts[0].code = '11010'), /does not have the shape/],
    ['a district outside its city prefix', (p) => (p[0].cities[0].districts[0].code = '120199'), /does not start with its parent's 1101/],
    ['a city outside its province prefix', (p) => (p[0].cities[0].code = '120900'), /does not start with its parent's 11/],
    ['a city code that is not xxxx00', (p) => (p[0].cities[0].code = '110101'), /does not have the shape/],
    ['a name twice within one parent', (p) => (p[0].cities[0].districts[1].name = p[0].cities[0].districts[0].name), /name used twice within 北京市 市辖区/],
    ['a code twice', (p) => p[1].cities[0].districts.push({ ...p[1].cities[0].districts.at(-1)!, name: '重复区' }), /code used twice/],
    ['codes out of order', (p) => p[0].cities[0].districts.reverse(), /not ordered by code/],
    ['one district too many', (p) => p[0].cities[0].districts.push({ code: '110199', name: '新区' }), /2847 districts, expected 2846/],
    ['a province missing', (p) => p.pop(), /30 provinces, expected 31/],
  ])('reports %s', (_case, change, problem) => {
    expect(broken(change).join('\n')).toMatch(problem);
  });
});
