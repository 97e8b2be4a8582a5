<?php
/**
 * A merchant client for the merchant-pay service: PHP 8.1+, no Composer, no extension beyond
 * the defaults (json, hash; HTTP through PHP's own streams, no curl).
 *
 * Copy this one file into your project. It signs requests exactly as the service checks them
 * (SPEC 3), calls every merchant operation, throws MerchantError for any answer whose code is
 * not 1, and verifies callbacks both ways (the body's `signature` and the Standard Webhooks
 * headers).
 *
 * As a library:
 *   require 'MerchantClient.php';
 *   $client = new MerchantClient('http://127.0.0.1:3000/api', $apiKey, $apiSecret);
 *   $order = $client->createOrder('100.00', 1, 'alipay', ['merchant_order_no' => 'A-1001']);
 *
 * As a command (env MERCHANT_BASE_URL, MERCHANT_API_KEY, MERCHANT_API_SECRET, and during a
 * secret rotation's grace optionally MERCHANT_API_SECRET_PREVIOUS):
 *   php MerchantClient.php call OPERATION '{"json":"params"}'   prints the answer's JSON on one line
 *   php MerchantClient.php sign '{"json":"params"}'             prints the signature of those parameters
 *   php MerchantClient.php verify 'HEADERS_JSON' < raw_body      checks a received callback
 *   php MerchantClient.php demo                                  create an order, wait for its callbacks
 */

declare(strict_types=1);

/** Any answer whose code is not 1 (SPEC 2), or no envelope at all (code 0: network, not JSON). getCode() is the code. */
class MerchantError extends RuntimeException
{
    public function __construct(int $code, public readonly string $msg, public readonly mixed $data = null, public readonly ?int $httpStatus = null)
    {
        parent::__construct("MerchantError $code: $msg", $code);
    }
}

final class MerchantClient
{
    /** A callback whose timestamp is further than this from now is refused (replays of old callbacks). */
    public const CALLBACK_TOLERANCE_SECONDS = 300;

    /**
     * @var string[] the secrets a callback may be signed with: the current one, then the previous during a rotation's grace.
     * During the grace the body's `signature` is made with one of them (the previous one until the grace ends, SPEC 3)
     * and `webhook-signature` carries an entry for each: each check passes with any secret held here.
     */
    private array $secrets;

    /**
     * @param string $baseUrl SPEC's {base_url}, e.g. http://127.0.0.1:3000/api
     * @param string|null $previousSecret the secret a rotation replaced: accepted on callbacks during its grace
     */
    public function __construct(private string $baseUrl, private string $apiKey, private string $apiSecret, ?string $previousSecret = null, private int $timeout = 15)
    {
        $this->baseUrl = rtrim($baseUrl, '/');
        $this->secrets = array_values(array_filter([$apiSecret, $previousSecret], fn ($s) => $s !== null && $s !== ''));
    }

    // -- signing (SPEC 3) ---------------------------------------------------------------------

    /** key=value of every parameter but `signature`, without null or "" values, sorted by key bytes, joined by &. */
    public static function canonicalString(array|object $params): string
    {
        $pairs = [];
        foreach ((array) $params as $key => $value) {
            $key = (string) $key;
            if ($key === 'signature' || $value === null || $value === '') {
                continue;
            }
            $pairs[$key] = $key . '=' . self::canonicalValue($value);
        }
        uksort($pairs, fn ($a, $b) => strcmp((string) $a, (string) $b));
        return implode('&', $pairs);
    }

    /** Lowercase hex HMAC-SHA256 of the canonical string, keyed with the secret's UTF-8 bytes. */
    public static function sign(array|object $params, string $apiSecret): string
    {
        return hash_hmac('sha256', self::canonicalString($params), $apiSecret);
    }

    private static function canonicalValue(mixed $value): string
    {
        if (is_string($value)) {
            return $value;
        }
        if (is_bool($value)) {
            return $value ? 'true' : 'false';
        }
        if (is_int($value) || is_float($value)) {
            return self::jsNumber($value);
        }
        return self::canonicalJson($value);
    }

    /** JSON with keys sorted by bytes at every level and no whitespace, numbers as JavaScript writes them. */
    public static function canonicalJson(mixed $value): string
    {
        if ($value === null) {
            return 'null';
        }
        if (is_bool($value)) {
            return $value ? 'true' : 'false';
        }
        if (is_int($value) || is_float($value)) {
            return self::jsNumber($value);
        }
        if (is_string($value)) {
            return json_encode($value, JSON_UNESCAPED_UNICODE | JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_LINE_TERMINATORS | JSON_THROW_ON_ERROR);
        }
        if (is_array($value) && array_is_list($value)) {
            return '[' . implode(',', array_map([self::class, 'canonicalJson'], $value)) . ']';
        }
        if (is_array($value) || $value instanceof stdClass) {
            $members = [];
            foreach ((array) $value as $k => $v) {
                $members[(string) $k] = self::canonicalJson((string) $k) . ':' . self::canonicalJson($v);
            }
            uksort($members, fn ($a, $b) => strcmp((string) $a, (string) $b));
            return '{' . implode(',', $members) . '}';
        }
        throw new InvalidArgumentException('cannot write a ' . get_debug_type($value) . ' as JSON');
    }

    /** A number as JavaScript's String(number) writes it (the service signs what it parsed). */
    public static function jsNumber(int|float $value): string
    {
        if (is_int($value) && abs($value) < 2 ** 53) {
            return (string) $value;
        }
        $value = (float) $value;
        if (!is_finite($value)) {
            throw new InvalidArgumentException('NaN and Infinity are not JSON');
        }
        if ($value == 0) {
            return '0';
        }
        $sign = $value < 0 ? '-' : '';
        $abs = abs($value);
        // The shortest digits that read back as the same double, as JavaScript picks them.
        for ($precision = 1; $precision <= 17; $precision++) {
            $text = sprintf('%.' . ($precision - 1) . 'e', $abs);
            if ((float) $text === $abs) {
                break;
            }
        }
        preg_match('/^(\d)(?:\.(\d+))?e([+-]\d+)$/', $text, $m);
        $digits = rtrim($m[1] . ($m[2] ?? ''), '0');
        $k = strlen($digits);
        $n = (int) $m[3] + 1; // value = 0.digits x 10^n
        if ($k <= $n && $n <= 21) {
            return $sign . $digits . str_repeat('0', $n - $k);
        }
        if (0 < $n && $n <= 21) {
            return $sign . substr($digits, 0, $n) . '.' . substr($digits, $n);
        }
        if (-6 < $n && $n <= 0) {
            return $sign . '0.' . str_repeat('0', -$n) . $digits;
        }
        $e = $n - 1;
        $mantissa = $k === 1 ? $digits : $digits[0] . '.' . substr($digits, 1);
        return $sign . $mantissa . 'e' . ($e >= 0 ? '+' : '-') . abs($e);
    }

    // -- requests ------------------------------------------------------------------------------

    /** The parameters with api_key, timestamp, nonce and signature added (null values left out). */
    public function signedParams(array|object $params): array
    {
        $body = array_filter((array) $params, fn ($v) => $v !== null);
        $body['api_key'] = $this->apiKey;
        $body['timestamp'] = time();
        $body['nonce'] = bin2hex(random_bytes(12));
        $body['signature'] = self::sign($body, $this->apiSecret);
        return $body;
    }

    /**
     * POST {base_url}/merchant/{operation}, signed; answers the raw JSON text of the envelope and
     * its HTTP status. Throws MerchantError (code 0) only when nothing came back: for a create,
     * retry with the same merchant_order_no / merchant_refund_no, which is safe.
     *
     * @return array{0: int, 1: string}
     */
    public function requestRaw(string $operation, array|object $params = []): array
    {
        if (!preg_match('#^https?://[^/]#', $this->baseUrl)) {
            throw new InvalidArgumentException('MerchantClient: ' . ($this->baseUrl === '' ? 'the base URL is missing' : "the base URL '{$this->baseUrl}' is not an absolute http(s) URL") . ': give your {base_url}, e.g. https://pay.example.com/api');
        }
        $context = stream_context_create(['http' => [
            'method' => 'POST',
            'header' => "Content-Type: application/json; charset=utf-8\r\nAccept: application/json\r\n",
            'content' => self::canonicalJson($this->signedParams($params)),
            'timeout' => $this->timeout,
            'ignore_errors' => true, // 4xx/5xx still carry the envelope
            'follow_location' => 0,
        ]]);
        $raw = @file_get_contents($this->baseUrl . '/merchant/' . $operation, false, $context);
        $headers = $http_response_header ?? [];
        if ($raw === false || !$headers || !preg_match('#^HTTP/\S+ (\d{3})#', $headers[0], $m)) {
            $why = error_get_last()['message'] ?? 'no answer';
            throw new MerchantError(0, "no answer from {$this->baseUrl}: $why");
        }
        return [(int) $m[1], $raw];
    }

    /** The envelope {code, msg, time, data} as it came (arrays for objects). */
    public function request(string $operation, array|object $params = []): array
    {
        [$status, $raw] = $this->requestRaw($operation, $params);
        return self::envelopeOf($status, $raw);
    }

    private static function envelopeOf(int $status, string $raw): array
    {
        $envelope = json_decode($raw, true);
        if (!is_array($envelope) || !array_key_exists('code', $envelope)) {
            throw new MerchantError(0, "HTTP $status answered something that is not an envelope", null, $status);
        }
        $envelope['_http_status'] = $status;
        return $envelope;
    }

    /** The envelope's data when its code is 1, else MerchantError with its code, msg and data. */
    public static function dataOf(array $envelope): mixed
    {
        if (($envelope['code'] ?? null) !== 1) {
            throw new MerchantError((int) ($envelope['code'] ?? 0), (string) ($envelope['msg'] ?? ''), $envelope['data'] ?? null, $envelope['_http_status'] ?? null);
        }
        return $envelope['data'] ?? null;
    }

    /** Any operation by name (a new one works before this file knows it): its data, or MerchantError. */
    public function call(string $operation, array|object $params = []): mixed
    {
        return self::dataOf($this->request($operation, $params));
    }

    // -- orders (SPEC 5) -----------------------------------------------------------------------

    /** A top-up order (amounts as text, "100.00"); $optional: customer_name, merchant_order_no, notify_url. */
    public function createOrder(string $cnyAmount, int $paychannelId, string $paychannelPaymethod, array $optional = []): array
    {
        return $this->call('createOrder', ['order_type' => 1, 'cny_amount' => $cnyAmount, 'paychannel_id' => $paychannelId, 'paychannel_paymethod' => $paychannelPaymethod] + $optional);
    }

    /** $filters: page, limit, status, order_type, start_time, end_time. Answers {list, total}, newest first. */
    public function orderQueryList(array $filters = []): array
    {
        return $this->call('orderQueryList', $filters);
    }

    /** By ['order_no' => ...] or ['merchant_order_no' => ...]. */
    public function orderQueryDetail(array $by): array
    {
        return $this->call('orderQueryDetail', $by);
    }

    public function getPayChannels(?string $category = null): array
    {
        return $this->call('getPayChannels', ['category' => $category]);
    }

    // -- money out (SPEC 6) --------------------------------------------------------------------

    public function orderClose(string $orderNo): array
    {
        return $this->call('orderClose', ['order_no' => $orderNo]);
    }

    /** Refund a completed order, wholly or in part; the same merchant_refund_no makes a retry safe. $optional: reason, notify_url. */
    public function refundCreate(string $orderNo, string $refundAmount, string $merchantRefundNo, array $optional = []): array
    {
        return $this->call('refundCreate', ['order_no' => $orderNo, 'refund_amount' => $refundAmount, 'merchant_refund_no' => $merchantRefundNo] + $optional);
    }

    /** By ['refund_no' => ...] or ['merchant_refund_no' => ...]. */
    public function refundQuery(array $by): array
    {
        return $this->call('refundQuery', $by);
    }

    public function refundQueryList(string $orderNo): array
    {
        return $this->call('refundQueryList', ['order_no' => $orderNo]);
    }

    /** A payout to your customer from your balance; $optional: merchant_order_no, notify_url. */
    public function createSellOrder(string $cnyAmount, int $paychannelId, string $payeeName, string $payeeAccount, string $payeeBank, array $optional = []): array
    {
        return $this->call('createSellOrder', ['cny_amount' => $cnyAmount, 'paychannel_id' => $paychannelId, 'payee_name' => $payeeName, 'payee_account' => $payeeAccount, 'payee_bank' => $payeeBank] + $optional);
    }

    /** The day's statement ($date YYYY-MM-DD, Asia/Shanghai): opening, movements, closing. */
    public function statementQuery(string $date): array
    {
        return $this->call('statementQuery', ['date' => $date]);
    }

    /** Your available and deposit balances now, in fen: ['available_fen' => int, 'deposit_fen' => int, 'as_of' => Unix seconds] (SPEC 6). */
    public function balanceQuery(): array
    {
        return $this->call('balanceQuery');
    }

    // -- callback tools (SPEC 7) ---------------------------------------------------------------

    public function callbackResend(string $orderNo): array
    {
        return $this->call('callbackResend', ['order_no' => $orderNo]);
    }

    public function callbackQueryList(string $orderNo): array
    {
        return $this->call('callbackQueryList', ['order_no' => $orderNo]);
    }

    public function callbackRecover(int $startTime, ?int $endTime = null): array
    {
        return $this->call('callbackRecover', ['start_time' => $startTime, 'end_time' => $endTime]);
    }

    public function callbackTest(?string $url = null): array
    {
        return $this->call('callbackTest', ['url' => $url]);
    }

    // -- callbacks we receive ------------------------------------------------------------------

    /** The body's `signature` (signed like a request), its api_key ours, its timestamp fresh. */
    public function verifyCallbackBody(array $body, ?int $now = null): bool
    {
        $signature = $body['signature'] ?? null;
        if (!is_string($signature) || ($body['api_key'] ?? null) !== $this->apiKey || !self::fresh($body['timestamp'] ?? null, $now)) {
            return false;
        }
        foreach ($this->secrets as $secret) {
            if (hash_equals(self::sign($body, $secret), strtolower($signature))) {
                return true;
            }
        }
        return false;
    }

    /**
     * Standard Webhooks: webhook-signature holds `v1,<base64 HMAC-SHA256 of id.timestamp.body>`
     * entries (two during a rotation's grace); any entry with any of our secrets passes.
     * $rawBody: the exact bytes received (file_get_contents('php://input')).
     */
    public function verifyCallbackHeaders(array $headers, string $rawBody, ?int $now = null): bool
    {
        $h = array_change_key_case($headers, CASE_LOWER);
        $id = $h['webhook-id'] ?? null;
        $timestamp = $h['webhook-timestamp'] ?? null;
        $signatures = $h['webhook-signature'] ?? null;
        if (!is_string($id) || !is_string($timestamp) || !is_string($signatures) || $id === '' || !self::fresh($timestamp, $now)) {
            return false;
        }
        foreach ($this->secrets as $secret) {
            $expected = base64_encode(hash_hmac('sha256', "$id.$timestamp.$rawBody", $secret, true));
            foreach (explode(' ', $signatures) as $entry) {
                [$version, $value] = array_pad(explode(',', $entry, 2), 2, '');
                if ($version === 'v1' && hash_equals($expected, $value)) {
                    return true;
                }
            }
        }
        return false;
    }

    /** Both checks on a received callback (getallheaders(), php://input): its body, or null when either fails. */
    public function verifyCallback(array $headers, string $rawBody): ?array
    {
        $body = json_decode($rawBody, true);
        if (!is_array($body) || !$this->verifyCallbackHeaders($headers, $rawBody) || !$this->verifyCallbackBody($body)) {
            return null;
        }
        return $body;
    }

    private static function fresh(mixed $timestamp, ?int $now): bool
    {
        if (is_string($timestamp) && preg_match('/^\d{1,15}$/', $timestamp)) {
            $timestamp = (int) $timestamp;
        }
        return is_int($timestamp) && abs(($now ?? time()) - $timestamp) <= self::CALLBACK_TOLERANCE_SECONDS;
    }

    // -- command line --------------------------------------------------------------------------

    private static function jsonObject(string $text, string $what, bool $assoc): array|stdClass
    {
        $value = json_decode($text, $assoc);
        if (!($assoc ? is_array($value) && !array_is_list($value) || $value === [] : $value instanceof stdClass)) {
            throw new InvalidArgumentException("$what must be a JSON object");
        }
        return $value;
    }

    public static function main(array $argv): int
    {
        $client = new MerchantClient(
            getenv('MERCHANT_BASE_URL') ?: '',
            getenv('MERCHANT_API_KEY') ?: '',
            getenv('MERCHANT_API_SECRET') ?: '',
            getenv('MERCHANT_API_SECRET_PREVIOUS') ?: null,
        );
        $command = $argv[0] ?? '';
        $count = count($argv);
        if ($client->apiSecret === '' && $command !== '') {
            fwrite(STDERR, "MERCHANT_API_SECRET is not set\n");
            return 2;
        }
        if ($command === 'sign' && $count === 2) {
            echo self::sign(self::jsonObject($argv[1], 'the parameters', false), $client->apiSecret), "\n";
            return 0;
        }
        if (in_array($command, ['call', 'demo'], true) && (getenv('MERCHANT_BASE_URL') ?: '') === '') {
            fwrite(STDERR, "MERCHANT_BASE_URL is not set (your {base_url}, e.g. http://127.0.0.1:3000/api)\n");
            return 2;
        }
        if ($command === 'call' && ($count === 2 || $count === 3)) {
            $params = $count === 3 ? self::jsonObject($argv[2], 'the parameters', false) : [];
            [$status, $raw] = $client->requestRaw($argv[1], $params);
            $envelope = self::envelopeOf($status, $raw);
            // Printed as it came: decoded as objects, so an empty {} stays {}.
            echo json_encode(json_decode($raw), JSON_UNESCAPED_UNICODE | JSON_UNESCAPED_SLASHES), "\n";
            try {
                self::dataOf($envelope);
            } catch (MerchantError $e) {
                fwrite(STDERR, $e->getMessage() . "\n");
                return 1;
            }
            return 0;
        }
        if ($command === 'verify' && $count === 2) {
            $raw = stream_get_contents(STDIN);
            $body = json_decode($raw, true);
            $result = [
                'body_signature' => is_array($body) && $client->verifyCallbackBody($body),
                'webhook_signature' => $client->verifyCallbackHeaders(self::jsonObject($argv[1], 'the headers', true), $raw),
            ];
            echo json_encode($result), "\n";
            return $result['body_signature'] && $result['webhook_signature'] ? 0 : 1;
        }
        if ($command === 'demo' && $count === 1) {
            return $client->demo((int) (getenv('DEMO_CALLBACK_PORT') ?: 4000), getenv('DEMO_AMOUNT') ?: '100.00');
        }
        fwrite(STDERR, "usage: php MerchantClient.php call OPERATION '{json}' | sign '{json}' | verify 'HEADERS_JSON' < body | demo\n");
        return 2;
    }

    /**
     * Create an order whose notify_url is a receiver on $port, print its pay_url, then print each
     * callback with both signatures checked until order.completed (or order.cancelled).
     */
    private function demo(int $port, string $amount): int
    {
        $server = stream_socket_server("tcp://127.0.0.1:$port", $errno, $error);
        if ($server === false) {
            fwrite(STDERR, "cannot listen on 127.0.0.1:$port: $error\n");
            return 1;
        }
        try {
            $channels = $this->getPayChannels()['list'];
            if (!$channels) {
                throw new MerchantError(0, 'no payment channel is linked to this merchant');
            }
            echo 'channels: ', implode('; ', array_map(fn ($c) => "{$c['id']} {$c['name']} ({$c['pay_method']})", $channels)), "\n";
            $channel = $channels[0];
            $order = $this->createOrder($amount, $channel['id'], explode(',', $channel['pay_method'])[0], [
                'customer_name' => 'Demo customer',
                'notify_url' => "http://127.0.0.1:$port/callback",
            ]);
            echo "order {$order['order_no']} is {$order['status']}; open this to pay:\n";
            echo "pay_url {$order['pay_url']}\n";
            echo "waiting for callbacks on http://127.0.0.1:$port/callback ...\n";
            for (;;) {
                $connection = @stream_socket_accept($server, 3600);
                if ($connection === false) {
                    continue;
                }
                [$headers, $raw] = self::readRequest($connection);
                $body = json_decode($raw, true) ?? [];
                $okBody = is_array($body) && $this->verifyCallbackBody($body);
                $okHeaders = $this->verifyCallbackHeaders($headers, $raw);
                printf("callback %s order %s status %s body-signature %s webhook-signature %s\n", $body['event'] ?? '?', $body['order_no'] ?? '?', $body['status'] ?? '?', $okBody ? 'valid' : 'INVALID', $okHeaders ? 'valid' : 'INVALID');
                $answer = $okBody && $okHeaders ? 'success' : 'bad signature';
                fwrite($connection, sprintf("HTTP/1.1 %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", $okBody && $okHeaders ? '200 OK' : '400 Bad Request', strlen($answer), $answer));
                fclose($connection);
                if ($okBody && $okHeaders && in_array($body['event'] ?? '', ['order.completed', 'order.cancelled'], true)) {
                    return 0;
                }
            }
        } catch (MerchantError $e) {
            fwrite(STDERR, $e->getMessage() . ' (data ' . json_encode($e->data, JSON_UNESCAPED_UNICODE) . ")\n");
            return 1;
        } finally {
            fclose($server);
        }
    }

    /** @return array{0: array<string, string>, 1: string} the headers (lowercase names) and the body of one HTTP request */
    private static function readRequest($connection): array
    {
        $head = '';
        while (!str_contains($head, "\r\n\r\n") && !feof($connection)) {
            $head .= fgets($connection);
        }
        $headers = [];
        foreach (array_slice(explode("\r\n", trim($head)), 1) as $line) {
            [$name, $value] = array_pad(explode(':', $line, 2), 2, '');
            $headers[strtolower(trim($name))] = trim($value);
        }
        $length = (int) ($headers['content-length'] ?? 0);
        $raw = '';
        while (strlen($raw) < $length && !feof($connection)) {
            $raw .= fread($connection, $length - strlen($raw));
        }
        return [$headers, $raw];
    }
}

if (PHP_SAPI === 'cli' && isset($argv[0]) && realpath($argv[0]) === __FILE__) {
    try {
        exit(MerchantClient::main(array_slice($argv, 1)));
    } catch (MerchantError $e) {
        fwrite(STDERR, $e->getMessage() . "\n");
        exit(1);
    } catch (InvalidArgumentException $e) {
        fwrite(STDERR, $e->getMessage() . "\n");
        exit(2);
    }
}
