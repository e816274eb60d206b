// The human's side of replies: an incoming message posted to `ringback serve`'s inbound webhook
// as Twilio posts it (form-encoded, signed with the official twilio SDK over the public URL),
// and the texts the simulator received for a number.
'use strict';

const twilio = require('twilio');

const INBOUND_PATH = '/api/notify/webhook/inbound';

/** A MessageSid: SM and 32 hex digits, from a small number (`tag` keeps tests' sids apart). */
function messageSid(n, tag = 0) {
  return `SM${tag.toString(16).padStart(8, '0')}${n.toString(16).padStart(24, '0')}`;
}

/** The form Twilio posts for an incoming SMS/MMS (the fields ringback reads, and some it does not). */
function inboundParams({ sid, from, to, body, media = [], accountSid, optOutType }) {
  const p = {
    ToCountry: 'US',
    SmsMessageSid: sid,
    NumMedia: String(media.length),
    SmsSid: sid,
    SmsStatus: 'received',
    Body: body,
    FromCountry: 'US',
    To: to,
    NumSegments: '1',
    MessageSid: sid,
    AccountSid: accountSid,
    From: from,
    ApiVersion: '2010-04-01',
  };
  media.forEach((m, i) => {
    p[`MediaUrl${i}`] = m.url;
    p[`MediaContentType${i}`] = m.contentType;
  });
  if (optOutType) p.OptOutType = optOutType;
  return p;
}

/**
 * POSTs `params` to `base` + the inbound path, signed for `publicUrl` + the path (the URL Twilio
 * called, RINGBACK_PUBLIC_URL) with `authToken`. Resolves {status, type, body}.
 */
async function postInbound({ base, publicUrl, authToken }, params) {
  const signature = twilio.getExpectedTwilioSignature(authToken, `${publicUrl}${INBOUND_PATH}`, params);
  const res = await fetch(`${base}${INBOUND_PATH}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': signature },
    body: new URLSearchParams(params).toString(),
  });
  return { status: res.status, type: res.headers.get('content-type'), body: await res.text() };
}

/** The bodies of the texts the simulator received for `to`, in arrival order. */
async function textsTo(simBase, to) {
  const res = await fetch(`${simBase}/sim/messages?to=${encodeURIComponent(to)}`);
  if (!res.ok) throw new Error(`GET /sim/messages answered ${res.status}`);
  return (await res.json()).map((m) => m.body);
}

const CODE_SUFFIX = /\n\n\(Start your reply with ([A-Z][0-9]{1,2})\.\)$/;

/** The reply code a question's text ends with, or null. */
function shownCode(text) {
  return CODE_SUFFIX.exec(text)?.[1] ?? null;
}

const EMPTY_TWIML = '<?xml version="1.0" encoding="UTF-8"?><Response/>';

module.exports = { messageSid, inboundParams, postInbound, textsTo, shownCode, INBOUND_PATH, EMPTY_TWIML };
