// X-Twilio-Signature test vectors computed with the official `twilio` SDK, written to
// fixtures/signature-vectors.json (bin/signature-vectors.js) so the Rust side can check its
// implementation against the SDK. See node-harness/README.md, "fixtures/signature-vectors.json".
'use strict';

const twilio = require('twilio');

const SDK_VERSION = require('twilio/package.json').version;

/**
 * What each vector states, before the SDK fills in signatures and URL checks:
 * `url` is the URL that was signed; `also_valid` / `invalid` are other URL forms a receiver might
 * rebuild; `expected` (optional) pins a signature written down in advance, not computed by the SDK:
 * for the `reference` vectors, the worked example of Twilio's security documentation
 * (https://www.twilio.com/docs/usage/security#validating-requests: auth token 12345, the
 * mycompany.com URL and its call parameters, and the JSON-body form with `bodySHA256`) and
 * variants of it (the vector names' "the worked example" means it).
 */
const SPECS = [
  {
    name: 'docs vector (the worked example)',
    source: 'reference',
    token: '12345',
    url: 'https://mycompany.com/myapp.php?foo=1&bar=2',
    params: { CallSid: 'CA1234567890ABCDE', Caller: '+12349013030', Digits: '1234', From: '+12349013030', To: '+18005551212' },
    expected: '0/KCTR6DLpKmkAf8muzZqo1nDgQ=',
    also_valid: ['https://mycompany.com:443/myapp.php?foo=1&bar=2'],
    invalid: ['http://mycompany.com/myapp.php?foo=1&bar=2', 'https://mycompany.com/myapp.php?bar=2&foo=1'],
  },
  {
    name: 'docs vector signed with :443 (the worked example)',
    source: 'reference',
    token: '12345',
    url: 'https://mycompany.com:443/myapp.php?foo=1&bar=2',
    params: { CallSid: 'CA1234567890ABCDE', Caller: '+12349013030', Digits: '1234', From: '+12349013030', To: '+18005551212' },
    expected: 'EpDEmp1PyjDYp77YxYU3GILBWzE=',
    also_valid: ['https://mycompany.com/myapp.php?foo=1&bar=2'],
    invalid: ['https://mycompany.com:8443/myapp.php?foo=1&bar=2'],
  },
  {
    name: 'status callback (the worked example)',
    source: 'reference',
    token: 'test_auth_token',
    url: 'https://example.com/twilio/status?tenant=42',
    params: {
      AccountSid: 'ACaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa',
      ApiVersion: '2010-04-01',
      From: '+15017122661',
      MessageSid: 'SMaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa',
      MessageStatus: 'delivered',
      SmsSid: 'SMaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa',
      SmsStatus: 'delivered',
      To: '+15558675310',
    },
    expected: 'n2LfpDa/ct6gz3IZHOggxBVE/NI=',
    also_valid: ['https://example.com:443/twilio/status?tenant=42'],
    invalid: ['https://example.com/twilio/status?tenant=43', 'https://example.com/twilio/status'],
  },
  {
    name: 'HMAC_SHA256 (SharedKey) variant of the docs vector (the worked example)',
    source: 'reference',
    algorithm: 'HMAC_SHA256',
    token: '12345',
    url: 'https://mycompany.com/myapp.php?foo=1&bar=2',
    params: { CallSid: 'CA1234567890ABCDE', Caller: '+12349013030', Digits: '1234', From: '+12349013030', To: '+18005551212' },
    expected: 'Rmm4Vzj+Ky7JGoWXMCsZDZuHDszLr9xvdbvitrDr4/M=',
    also_valid: ['https://mycompany.com:443/myapp.php?foo=1&bar=2'],
    invalid: [],
  },
  {
    name: 'JSON body: URL carries bodySHA256, no params (the worked example)',
    source: 'reference',
    token: '12345',
    url: 'https://mycompany.com/myapp.php?foo=1&bar=2&bodySHA256=0a1ff7634d9ab3b95db5c9a2dfe9416e41502b283a80c7cf19632632f96e6620',
    params: {},
    body: '{"property": "value", "boolean": true}',
    expected: 'a9nBmqA0ju/hNViExpshrM61xv4=',
    also_valid: [],
    invalid: ['https://mycompany.com/myapp.php?foo=1&bar=2'],
  },
  {
    name: 'http without port: :80 form also valid, https form not',
    source: 'sdk',
    token: 'sim-auth-token',
    url: 'http://callbacks.example.org/twilio/status',
    params: { MessageSid: 'SM0123456789abcdef0123456789abcdef', MessageStatus: 'sent' },
    also_valid: ['http://callbacks.example.org:80/twilio/status'],
    invalid: ['https://callbacks.example.org/twilio/status'],
  },
  {
    name: 'SDK quirk: a URL signed without a port also validates when received with ANY port (removePort drops it)',
    source: 'sdk',
    token: 'sim-auth-token',
    url: 'http://callbacks.example.org/twilio/status',
    params: { MessageSid: 'SM0123456789abcdef0123456789abcdef', MessageStatus: 'delivered' },
    also_valid: ['http://callbacks.example.org:8080/twilio/status', 'http://callbacks.example.org:80/twilio/status'],
    invalid: [],
  },
  {
    name: 'loopback with a non-default port (as the simulator calls back): the port is part of the URL',
    source: 'sdk',
    token: 'sim-auth-token',
    url: 'http://127.0.0.1:38411/status?runId=r1',
    params: {
      AccountSid: 'AC0123456789abcdef0123456789abcdef',
      ApiVersion: '2010-04-01',
      ErrorCode: '30003',
      From: '+15005550006',
      MessageSid: 'SM0123456789abcdef0123456789abcdef',
      MessageStatus: 'undelivered',
      RawDlrDoneDate: '2611301015',
      SmsSid: 'SM0123456789abcdef0123456789abcdef',
      SmsStatus: 'undelivered',
      To: '+15550000003',
    },
    also_valid: [],
    invalid: ['http://127.0.0.1/status?runId=r1', 'http://127.0.0.1:80/status?runId=r1', 'http://127.0.0.1:38411/status'],
  },
  {
    name: 'query string kept byte for byte (percent-escapes and + are not decoded)',
    source: 'sdk',
    token: 'tok-with-symbols_!@#',
    url: 'https://example.com/cb?a=1&b=two%20words&c=x%2By&d=x+y',
    params: { Body: 'hi' },
    also_valid: ['https://example.com:443/cb?a=1&b=two%20words&c=x%2By&d=x+y'],
    invalid: ['https://example.com/cb?a=1&b=two words&c=x+y&d=x+y', 'https://example.com/cb?b=two%20words&a=1&c=x%2By&d=x+y'],
  },
  {
    name: "apostrophe signed escaped: the SDK's WHATWG normalisation of the received URL matches",
    source: 'sdk',
    token: 'sim-auth-token',
    url: 'https://example.com/cb?name=O%27Brien',
    params: { Body: 'x' },
    also_valid: ["https://example.com/cb?name=O'Brien"],
    invalid: [],
  },
  {
    name: 'values with +, spaces, unicode and an empty value (decoded form values are signed)',
    source: 'sdk',
    token: 'sim-auth-token',
    url: 'https://example.com/sms',
    params: { Body: 'Ça marche ✓ 日本語 a+b c', Empty: '', From: '+15005550006', To: '+15558675310' },
    also_valid: ['https://example.com:443/sms'],
    invalid: [],
  },
  {
    name: 'names sorted case-sensitively by code unit (upper case before lower, _ between)',
    source: 'sdk',
    token: 'sim-auth-token',
    url: 'https://example.com/sort',
    params: { b: '1', A: '2', a: '3', _: '4', Z: '5', a1: '6' },
    also_valid: [],
    invalid: [],
  },
  {
    name: 'multi-valued params: distinct values, sorted, each appended as name+value',
    source: 'sdk',
    token: 'sim-auth-token',
    url: 'https://example.com/mms',
    params: { MediaUrl: ['https://m.example/b.png', 'https://m.example/a.png', 'https://m.example/b.png'], NumMedia: '3' },
    also_valid: [],
    invalid: [],
  },
  {
    name: 'multi-valued unicode values: JS sort is by UTF-16 code unit (emoji before U+FF01), not by UTF-8 byte',
    source: 'sdk',
    token: 'sim-auth-token',
    url: 'https://example.com/sort-unicode',
    params: { V: ['\uFF01', '\u{1F600}', 'z'] },
    also_valid: [],
    invalid: [],
  },
];

/** The SDK's answer for every spec: signature, and which URL forms validate. */
function buildVectors() {
  return SPECS.map((spec) => {
    const { expected, also_valid: alsoValid, invalid, source, ...rest } = spec;
    const signature = twilio.getExpectedTwilioSignature(spec.token, spec.url, spec.params, spec.algorithm);
    const validates = (url) => twilio.validateRequest(spec.token, signature, url, spec.params, spec.algorithm);
    // The SDK decides which forms validate; the test checks that it agrees with the spec.
    const forms = [spec.url, ...alsoValid, ...invalid];
    const vector = {
      ...rest,
      source,
      signature,
      valid_url_forms: forms.filter(validates),
      invalid_url_forms: forms.filter((u) => !validates(u)),
    };
    if (spec.body !== undefined) vector.body_sha256 = twilio.getExpectedBodyHash(spec.body);
    return vector;
  });
}

function document() {
  return {
    generated_by: `twilio@${SDK_VERSION} getExpectedTwilioSignature / validateRequest (node-harness/bin/signature-vectors.js)`,
    vectors: buildVectors(),
  };
}

module.exports = { SPECS, buildVectors, document, SDK_VERSION };
