import { Injectable } from '@nestjs/common';
import { DomainError, ErrorCode, ok, unixSeconds, apiMessage } from '@app/common';
import { type City, type Province, REGION_PROVINCES } from '@app/region';
import { PrecomputedResponse } from './precomputed-response';

/** An entry of provinceList, cityList and districtList (interface 2.4). */
export interface RegionEntry {
  name: string;
  code: string;
}

/** The regionData tree (interface 2.4): province name -> { val, items: city name -> { val, items: district name -> code } }. */
export type RegionTreeView = Record<string, { val: string; items: Record<string, { val: string; items: Record<string, string> }> }>;

const entry = ({ name, code }: { name: string; code: string }): RegionEntry => ({ name, code });

/**
 * Every region answer, built once at start-up from the committed GB/T 2260 data (SPEC 4).
 * A request only looks up bytes by exact name; nothing is serialised or compressed per request.
 */
@Injectable()
export class RegionService {
  // `time` is fixed at start-up: the bytes, and so the strong ETag, must be the same on every request.
  private readonly builtAt = String(unixSeconds());
  private readonly regionDataAnswer: PrecomputedResponse;
  private readonly provinceListAnswer: PrecomputedResponse;
  private readonly cityListAnswers = new Map<string, PrecomputedResponse>();
  private readonly districtListAnswers = new Map<string, Map<string, PrecomputedResponse>>();

  constructor() {
    const provinces = REGION_PROVINCES;
    this.regionDataAnswer = this.precompute(toTreeView(provinces));
    this.provinceListAnswer = this.precompute(provinces.map(entry));
    for (const province of provinces) {
      this.cityListAnswers.set(province.name, this.precompute(province.cities.map(entry)));
      // Maps, not objects: a name like "__proto__" or "toString" must be unknown, not an inherited member.
      this.districtListAnswers.set(province.name, new Map(province.cities.map((city: City) => [city.name, this.precompute(city.districts.map(entry))])));
    }
  }

  regionData(): PrecomputedResponse {
    return this.regionDataAnswer;
  }

  provinceList(): PrecomputedResponse {
    return this.provinceListAnswer;
  }

  cityList(province: unknown): PrecomputedResponse {
    const answer = this.cityListAnswers.get(requiredName('province', province));
    if (!answer) throw new DomainError(ErrorCode.RegionNotFound, apiMessage('region.provinceNotFound'));
    return answer;
  }

  districtList(province: unknown, city: unknown): PrecomputedResponse {
    const cities = this.districtListAnswers.get(requiredName('province', province));
    const cityName = requiredName('city', city);
    if (!cities) throw new DomainError(ErrorCode.RegionNotFound, apiMessage('region.provinceNotFound'));
    const answer = cities.get(cityName);
    if (!answer) throw new DomainError(ErrorCode.RegionNotFound, apiMessage('region.cityNotFound'));
    return answer;
  }

  private precompute(data: unknown): PrecomputedResponse {
    return PrecomputedResponse.ofJson({ ...ok(data), time: this.builtAt });
  }
}

/** A query parameter the contract requires: one non-empty string, matched exactly (no trimming), else 40000. */
function requiredName(field: string, value: unknown): string {
  if (value === undefined || value === '') throw DomainError.invalid(field, apiMessage('auth.required'));
  if (typeof value !== 'string') throw DomainError.invalid(field, apiMessage('field.singleString'));
  return value;
}

function toTreeView(provinces: readonly Province[]): RegionTreeView {
  const tree: RegionTreeView = {};
  for (const province of provinces) {
    const cities: RegionTreeView[string]['items'] = {};
    for (const city of province.cities) {
      cities[city.name] = { val: city.code, items: Object.fromEntries(city.districts.map((d) => [d.name, d.code])) };
    }
    tree[province.name] = { val: province.code, items: cities };
  }
  return tree;
}
