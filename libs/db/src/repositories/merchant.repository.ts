import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { Repository } from 'typeorm';
import { Merchant, type MerchantStatus } from '../entities';

export interface NewMerchant {
  name: string;
  apiKey: string;
  apiSecretEnc: string;
  notifyUrl: string | null;
  depositRate: string;
}

@Injectable()
export class MerchantRepository {
  constructor(@InjectRepository(Merchant) private readonly merchants: Repository<Merchant>) {}

  findByApiKey(apiKey: string): Promise<Merchant | null> {
    return this.merchants.findOneBy({ apiKey });
  }

  findById(id: number): Promise<Merchant | null> {
    return this.merchants.findOneBy({ id });
  }

  create(values: NewMerchant): Promise<Merchant> {
    return this.merchants.save(this.merchants.create({ ...values, status: 'active' }));
  }

  /** Returns false when no merchant has that id. */
  async update(id: number, values: Partial<Pick<Merchant, 'status' | 'notifyUrl' | 'depositRate' | 'apiSecretEnc'>>): Promise<boolean> {
    const result = await this.merchants.update({ id }, values);
    return (result.affected ?? 0) > 0;
  }

  setStatus(id: number, status: MerchantStatus): Promise<boolean> {
    return this.update(id, { status });
  }
}
