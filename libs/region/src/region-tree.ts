/** One district (or county-level unit) of GB/T 2260: a 6-digit code and its name. */
export interface District {
  code: string;
  name: string;
}

export interface City {
  code: string;
  name: string;
  districts: District[];
}

export interface Province {
  code: string;
  name: string;
  cities: City[];
}

/** The committed data file (libs/region/data/regions.json): provinces, cities and districts ordered by code. */
export interface RegionDataFile {
  source: string;
  standard: string;
  provinces: Province[];
}
