import { createSign } from 'node:crypto';
import { AlipaySdk } from 'alipay-sdk';
import { Aes, Formatter, Rsa } from 'wechatpay-axios-plugin';

/**
 * The fakes' oracle: the providers' own Node SDKs (devDependencies), code we did not write. A
 * fake verifies what the service sends and signs what it answers through these, never through a
 * rule of its own, so a misreading shared by an adapter and its fake fails a test instead of
 * passing both. Issue 35's cashier modes sign and verify through the same two classes.
 */

/** The serial numbers alipay-sdk computes for a certificate-mode app (its antcertutil.getSN, read back from its config). */
export interface AlipayCertificateSns {
  appCertSn: string;
  alipayCertSn: string;
  alipayRootCertSn: string;
}

/** Alipay through alipay-sdk 4.14 (its checkNotifySign, notifyRSACheck and getSignStr rules; its certificate SNs). */
export class AlipayOracle {
  /** What alipay-sdk makes of an app's three certificates: the SNs its requests carry and its answers name. */
  static certificateSns(certificates: { appCert: string; alipayCert: string; rootCert: string }, anyPrivateKey: string): AlipayCertificateSns {
    const sdk = new AlipaySdk({
      appId: 'oracle',
      privateKey: anyPrivateKey.trim(),
      keyType: 'PKCS8',
      appCertContent: certificates.appCert,
      alipayPublicCertContent: certificates.alipayCert,
      alipayRootCertContent: certificates.rootCert,
    });
    const { appCertSn, alipayCertSn, alipayRootCertSn } = sdk.config as { appCertSn?: string; alipayCertSn?: string; alipayRootCertSn?: string };
    if (!appCertSn || !alipayCertSn || !alipayRootCertSn) throw new Error('fake alipay: alipay-sdk computed no certificate SN');
    return { appCertSn, alipayCertSn, alipayRootCertSn };
  }

  /** Holds the app's public key: verifies what the service signs. */
  private readonly app: AlipaySdk;
  /** Holds Alipay's key pair: builds and checks what Alipay signs. */
  private readonly platform: AlipaySdk;

  constructor(
    appId: string,
    appPublicKey: string,
    private readonly platformKeys: { privateKey: string; publicKey: string },
  ) {
    this.app = new AlipaySdk({ appId, privateKey: platformKeys.privateKey.trim(), alipayPublicKey: appPublicKey.trim(), keyType: 'PKCS8' });
    this.platform = new AlipaySdk({ appId, privateKey: platformKeys.privateKey.trim(), alipayPublicKey: platformKeys.publicKey.trim(), keyType: 'PKCS8' });
  }

  /** A request the service signed, verified as alipay-sdk verifies: every parameter but sign, sign_type included, empty values as `key=`. */
  requestVerifies(params: Record<string, string>): boolean {
    try {
      return this.app.checkNotifySignV2({ ...params });
    } catch {
      return false;
    }
  }

  /**
   * A notification as Alipay signs it: the content is the one alipay-sdk's notifyRSACheck builds
   * (every parameter but sign and sign_type, sorted, empty values as `key=`), captured from the
   * SDK itself, then checked back with its checkNotifySignV2. `signer`: another key to forge one.
   */
  signNotification(params: Record<string, string>, signer = this.platformKeys.privateKey): Record<string, string> {
    const { sign: _sign, sign_type: _signType, ...signed } = params;
    const content = sdkContent(this.platform, signed);
    const sign = createSign('RSA-SHA256').update(content, 'utf8').sign(signer, 'base64');
    const notification = { ...params, sign };
    if (signer === this.platformKeys.privateKey && !this.platform.checkNotifySignV2({ ...notification }))
      throw new Error('fake alipay: alipay-sdk does not verify the notification it signed');
    return notification;
  }

  /**
   * An answer body `{"<key>":<member>,"sign":"..."}` signed over what alipay-sdk's getSignStr cuts
   * out of it, then checked back with checkResponseSign (which throws when they disagree).
   */
  signedAnswer(key: string, member: string, signer = this.platformKeys.privateKey, alipayCertSn?: string): string {
    // Certificate mode: the SN of Alipay's certificate between the member and the sign, as Alipay writes it.
    const named = alipayCertSn === undefined ? '' : `"alipay_cert_sn":"${alipayCertSn}",`;
    // getSignStr cuts at an offset taken from the whole body: the draft carries a signature's length.
    const placeholder = 'A'.repeat(createSign('RSA-SHA256').update('').sign(signer, 'base64').length);
    const draft = `{"${key}":${member},${named}"sign":"${placeholder}"}`;
    const sign = createSign('RSA-SHA256').update(this.platform.getSignStr(draft, key), 'utf8').sign(signer, 'base64');
    const body = `{"${key}":${member},${named}"sign":"${sign}"}`;
    if (signer === this.platformKeys.privateKey) this.platform.checkResponseSign(body, key, sign, 'fake');
    return body;
  }
}

/** The content alipay-sdk's notifyRSACheck verifies, taken from the SDK: its rsaCheck sees it first. */
function sdkContent(sdk: AlipaySdk, params: Record<string, string>): string {
  let content: string | null = null;
  // notifyRSACheck is private in the SDK's types, public in its JavaScript: the probe sees it as JavaScript does.
  const probe = Object.create(sdk) as {
    rsaCheck(text: string): boolean;
    notifyRSACheck(args: object, sign: string, type: string, raw: boolean): boolean;
  };
  probe.rsaCheck = (text: string) => ((content = text), true);
  probe.notifyRSACheck(params, 'unused', 'RSA2', true);
  if (content === null) throw new Error('fake alipay: alipay-sdk built no content');
  return content;
}

/** WeChat Pay API v3 through wechatpay-axios-plugin 0.9 (its Formatter, Rsa and Aes). */
export class WechatpayOracle {
  /**
   * The Authorization of a request the service sent, verified by the plugin's rule: Formatter.request
   * (METHOD, URI, timestamp, nonce, body, each line-fed) and Rsa.verify with the merchant's key.
   * Null when it verifies, else why not.
   */
  static requestRefusal(
    method: string,
    uri: string,
    body: string,
    authorization: string,
    merchant: { mchid: string; serialNo: string; publicKey: string },
  ): string | null {
    const m = /^WECHATPAY2-SHA256-RSA2048 (.+)$/.exec(authorization);
    if (!m) return 'no WECHATPAY2-SHA256-RSA2048 authorization';
    const fields = Object.fromEntries([...m[1].matchAll(/(\w+)="([^"]*)"/g)].map((f) => [f[1], f[2]]));
    if (fields.mchid !== merchant.mchid) return 'mchid';
    if (fields.serial_no !== merchant.serialNo) return 'serial_no';
    if (Math.abs(Formatter.timestamp() - Number(fields.timestamp)) > 300) return 'timestamp';
    try {
      return Rsa.verify(Formatter.request(method, uri, fields.timestamp, fields.nonce_str, body), fields.signature, merchant.publicKey) ? null : 'SIGN_ERROR';
    } catch {
      return 'SIGN_ERROR';
    }
  }

  /** The signature headers WeChat Pay puts on an answer or a notification: Rsa.sign of Formatter.response. */
  static signatureHeaders(body: string, key: { privateKey: string; serial: string }, timestamp = Formatter.timestamp()): Record<string, string> {
    const nonce = Formatter.nonce();
    return {
      'wechatpay-timestamp': String(timestamp),
      'wechatpay-nonce': nonce,
      'wechatpay-signature': Rsa.sign(Formatter.response(timestamp, nonce, body), key.privateKey),
      'wechatpay-serial': key.serial,
    };
  }

  /**
   * A JSAPI getBrandWCPayRequest argument as WeChat checks it: paySign is Rsa.verify (the merchant's
   * key) of Formatter.joinedByLineFeed(appId, timeStamp, nonceStr, package), signType RSA. Null when
   * it verifies, else why not.
   */
  static jsapiRefusal(request: Record<string, unknown>, merchantPublicKey: string): string | null {
    const field = (key: string): string => (typeof request[key] === 'string' ? (request[key] as string) : '');
    const [appId, timeStamp, nonceStr, pkg, paySign] = ['appId', 'timeStamp', 'nonceStr', 'package', 'paySign'].map(field);
    if ([appId, timeStamp, nonceStr, pkg, paySign].includes('')) return 'a field is missing';
    const { signType } = request;
    if (signType !== 'RSA') return 'signType';
    if (Math.abs(Formatter.timestamp() - Number(timeStamp)) > 300) return 'timeStamp';
    try {
      return Rsa.verify(Formatter.joinedByLineFeed(appId, timeStamp, nonceStr, pkg), paySign, merchantPublicKey) ? null : 'paySign';
    } catch {
      return 'paySign';
    }
  }

  /** A resource as WeChat Pay encrypts it: Aes.AesGcm (AEAD_AES_256_GCM, the tag appended), base64. */
  static encrypt(plain: string, apiV3Key: string, nonce: string, associatedData: string): string {
    return Aes.AesGcm.encrypt(plain, apiV3Key, nonce, associatedData);
  }
}
