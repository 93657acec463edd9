// The formats where ajv-formats answers otherwise than the JSON Schema Test Suite (draft 2020-12) or backtracks
// for seconds on a long value, defined again as the server defines them (agentturn/forms/formats.py: the same
// expressions, the same steps). validator.mjs puts them over ajv-formats' own, and the differential Ajv check
// (tests/differential/ajv_check.mjs) over Ajv's, so server, console and Ajv still answer alike; the suite's
// cases run on both sides in tests/differential/test_json_schema_test_suite.py.

const DATE = /^(\d\d\d\d)-(\d\d)-(\d\d)$/;
const DAYS = [0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const isLeapYear = (year) => year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);

function date(value) {
  const match = DATE.exec(value);
  if (!match) return false;
  const [year, month, day] = match.slice(1).map(Number);
  return month >= 1 && month <= 12 && day >= 1 && day <= (month === 2 && isLeapYear(year) ? 29 : DAYS[month]);
}

// RFC 3339 full-time: the offset is part of a time ("Z" or ±hh:mm).
const TIME = /^(\d\d):(\d\d):(\d\d)(?:\.\d+)?(?:z|([+-])(\d\d):(\d\d))$/i;

function time(value) {
  const match = TIME.exec(value);
  if (!match) return false;
  const [hour, minute, second] = match.slice(1, 4).map(Number);
  const sign = match[4];
  const offsetHour = Number(match[5] ?? 0);
  const offsetMinute = Number(match[6] ?? 0);
  if (hour > 23 || minute > 59 || second > 60 || offsetHour > 23 || offsetMinute > 59) return false;
  if (second < 60) return true;
  // A leap second is inserted at 23:59:60 UTC (RFC 3339 §5.7): in local time, that minute moved by the offset.
  const offset = (offsetHour * 60 + offsetMinute) * (sign === "-" ? -1 : 1);
  return (((hour * 60 + minute - offset) % 1440) + 1440) % 1440 === 23 * 60 + 59;
}

function dateTime(value) {
  const parts = value.split(/t|\s/i, 3);
  return parts.length === 2 && date(parts[0]) && time(parts[1]);
}

// RFC 3339 Appendix A.
const DURATION =
  /^P(?:(?:\d+Y(?:\d+M(?:\d+D)?)?|\d+M(?:\d+D)?|\d+D)(?:T(?:\d+H(?:\d+M(?:\d+S)?)?|\d+M(?:\d+S)?|\d+S))?|T(?:\d+H(?:\d+M(?:\d+S)?)?|\d+M(?:\d+S)?|\d+S)|\d+W)$/;

const IPV4 = /^(?:(?:25[0-5]|2[0-4]\d|[01]?\d\d?)\.){3}(?:25[0-5]|2[0-4]\d|[01]?\d\d?)$/;
// ajv-formats' own (it refuses a leading zero in an embedded IPv4 address, as the suite wants).
const IPV6 =
  /^((([0-9a-f]{1,4}:){7}([0-9a-f]{1,4}|:))|(([0-9a-f]{1,4}:){6}(:[0-9a-f]{1,4}|((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3})|:))|(([0-9a-f]{1,4}:){5}(((:[0-9a-f]{1,4}){1,2})|:((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3})|:))|(([0-9a-f]{1,4}:){4}(((:[0-9a-f]{1,4}){1,3})|((:[0-9a-f]{1,4})?:((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}))|:))|(([0-9a-f]{1,4}:){3}(((:[0-9a-f]{1,4}){1,4})|((:[0-9a-f]{1,4}){0,2}:((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}))|:))|(([0-9a-f]{1,4}:){2}(((:[0-9a-f]{1,4}){1,5})|((:[0-9a-f]{1,4}){0,3}:((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}))|:))|(([0-9a-f]{1,4}:){1}(((:[0-9a-f]{1,4}){1,6})|((:[0-9a-f]{1,4}){0,4}:((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}))|:))|(:(((:[0-9a-f]{1,4}){1,7})|((:[0-9a-f]{1,4}){0,5}:((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}))|:)))$/i;

// RFC 3986: split as its Appendix B does, then each part checked by its own grammar (all linear).
const URI_PARTS = /^(?:([^:/?#]+):)?(?:\/\/([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?$/;
const SCHEME = /^[a-z][a-z0-9+\-.]*$/i;
const USERINFO = /^(?:[a-z0-9\-._~!$&'()*+,;=:]|%[0-9a-f]{2})*$/i;
const REG_NAME = /^(?:[a-z0-9\-._~!$&'()*+,;=]|%[0-9a-f]{2})*$/i;
const PORT = /^[0-9]*$/;
const IP_FUTURE = /^v[0-9a-f]+\.[a-z0-9\-._~!$&'()*+,;=:]+$/i;
const PATH = /^(?:[a-z0-9\-._~!$&'()*+,;=:@/]|%[0-9a-f]{2})*$/i;
const QUERY = /^(?:[a-z0-9\-._~!$&'()*+,;=:@/?]|%[0-9a-f]{2})*$/i;

function authorityOk(authority) {
  const at = authority.lastIndexOf("@");
  if (at >= 0 && !USERINFO.test(authority.slice(0, at))) return false;
  const hostPort = authority.slice(at + 1);
  if (hostPort.startsWith("[")) {
    const close = hostPort.indexOf("]");
    if (close < 0) return false;
    const host = hostPort.slice(1, close);
    const port = hostPort.slice(close + 1);
    if (!(IPV6.test(host) || IP_FUTURE.test(host))) return false;
    return port === "" || (port.startsWith(":") && PORT.test(port.slice(1)));
  }
  const colon = hostPort.indexOf(":");
  const host = colon < 0 ? hostPort : hostPort.slice(0, colon);
  const port = colon < 0 ? "" : hostPort.slice(colon + 1);
  return REG_NAME.test(host) && PORT.test(port);
}

function uriReference(value, absolute = false) {
  const parts = URI_PARTS.exec(value);
  if (!parts) return false;
  const [, scheme, authority, path, query, fragment] = parts;
  if (scheme === undefined) {
    // A relative reference: its first segment cannot hold a colon (it would read as a scheme).
    if (absolute || path.split("/")[0].includes(":")) return false;
  } else if (!SCHEME.test(scheme)) {
    return false;
  }
  if (authority !== undefined && !authorityOk(authority)) return false;
  return PATH.test(path) && (query === undefined || QUERY.test(query)) && (fragment === undefined || QUERY.test(fragment));
}

// RFC 6570 level 4, read literal run by literal run and expression by expression (literals as the JSON Schema
// Test Suite reads them: the apostrophe is one).
const URI_TEMPLATE_LITERALS =
  /^(?:[\x21\x23\x24\x26-\x3b\x3d\x3f-\x5b\x5d\x5f\x61-\x7a\x7e\u{a0}-\u{d7ff}\u{e000}-\u{fdcf}\u{fdf0}-\u{ffef}\u{10000}-\u{1fffd}\u{20000}-\u{2fffd}\u{30000}-\u{3fffd}\u{40000}-\u{4fffd}\u{50000}-\u{5fffd}\u{60000}-\u{6fffd}\u{70000}-\u{7fffd}\u{80000}-\u{8fffd}\u{90000}-\u{9fffd}\u{a0000}-\u{afffd}\u{b0000}-\u{bfffd}\u{c0000}-\u{cfffd}\u{d0000}-\u{dfffd}\u{e1000}-\u{efffd}\u{f0000}-\u{ffffd}\u{100000}-\u{10fffd}]|%[0-9a-f]{2})*$/iu;
const URI_TEMPLATE_EXPRESSION =
  /^\{[+#./;?&=,!@|]?(?:[a-z0-9_]|%[0-9a-f]{2})(?:\.?(?:[a-z0-9_]|%[0-9a-f]{2}))*(?::[1-9][0-9]{0,3}|\*)?(?:,(?:[a-z0-9_]|%[0-9a-f]{2})(?:\.?(?:[a-z0-9_]|%[0-9a-f]{2}))*(?::[1-9][0-9]{0,3}|\*)?)*\}$/i;

function uriTemplate(value) {
  for (let pos = 0; ; ) {
    const opening = value.indexOf("{", pos);
    if (!URI_TEMPLATE_LITERALS.test(value.slice(pos, opening >= 0 ? opening : value.length))) return false;
    if (opening < 0) return true;
    const closing = value.indexOf("}", opening);
    if (closing < 0 || !URI_TEMPLATE_EXPRESSION.test(value.slice(opening, closing + 1))) return false;
    pos = closing + 1;
  }
}

// E-mail (RFC 5321 Mailbox).
const EMAIL_DOT_STRING = /^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*@/i;
const EMAIL_QUOTED = /^"(?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\[\x20-\x7e])*"@/;
// Two unambiguous expressions for the domain (the one-expression form backtracks quadratically).
const EMAIL_DOMAIN = /^[a-z0-9-]+(?:\.[a-z0-9-]+)+$/i;
const EMAIL_HYPHEN_AT_EDGE = /(?:^|\.)-|-(?:\.|$)/;
const IPV6_TAG = /^IPv6:/i;

function email(value) {
  const local = EMAIL_QUOTED.exec(value) ?? EMAIL_DOT_STRING.exec(value);
  if (!local) return false;
  const domain = value.slice(local[0].length);
  if (domain.startsWith("[") && domain.endsWith("]")) {
    const literal = domain.slice(1, -1);
    const tag = IPV6_TAG.exec(literal);
    return tag ? IPV6.test(literal.slice(tag[0].length)) : IPV4.test(literal);
  }
  return EMAIL_DOMAIN.test(domain) && !EMAIL_HYPHEN_AT_EDGE.test(domain);
}

// Host names, with "xn--" labels only when they are valid A-labels (RFC 3492, RFC 5891 §4.2, RFC 5892).
const HOST_LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/i;

/** RFC 3492 §6.2, strictly; null if invalid. Code points, not UTF-16 units. */
export function punycodeDecode(encoded) {
  const BASE = 36, TMIN = 1, TMAX = 26, SKEW = 38, DAMP = 700;
  const cut = encoded.lastIndexOf("-");
  const basic = cut < 0 ? "" : encoded.slice(0, cut);
  const extended = cut < 0 ? encoded : encoded.slice(cut + 1);
  if ([...basic].some((c) => c.codePointAt(0) >= 0x80)) return null;
  const output = [...basic].map((c) => c.codePointAt(0));
  let n = 0x80, i = 0, bias = 72, pos = 0, first = true;
  while (pos < extended.length) {
    const oldI = i;
    let w = 1;
    for (let k = BASE; ; k += BASE) {
      if (pos >= extended.length) return null;
      const c = extended[pos++].toLowerCase();
      const digit = c >= "a" && c <= "z" ? c.charCodeAt(0) - 0x61 : c >= "0" && c <= "9" ? c.charCodeAt(0) - 0x30 + 26 : -1;
      if (digit < 0) return null;
      i += digit * w;
      const t = k <= bias ? TMIN : k >= bias + TMAX ? TMAX : k - bias;
      if (digit < t) break;
      w *= BASE - t;
      if (i > 0x10ffff * (output.length + 1)) return null; // a sure overflow: stop before the numbers grow
    }
    const length = output.length + 1;
    let delta = Math.floor((i - oldI) / (first ? DAMP : 2));
    delta += Math.floor(delta / length);
    let k = 0;
    while (delta > Math.floor(((BASE - TMIN) * TMAX) / 2)) {
      delta = Math.floor(delta / (BASE - TMIN));
      k += BASE;
    }
    bias = k + Math.floor(((BASE - TMIN + 1) * delta) / (delta + SKEW));
    n += Math.floor(i / length);
    i %= length;
    if (n > 0x10ffff || (n >= 0xd800 && n <= 0xdfff)) return null;
    output.splice(i, 0, n);
    i += 1;
    first = false;
  }
  return output;
}

const PVALID_EXCEPTIONS = new Set([0xdf, 0x3c2, 0x6fd, 0x6fe, 0xf0b, 0x3007]);
const DISALLOWED_EXCEPTIONS = new Set([0x640, 0x7fa, 0x302e, 0x302f, 0x3031, 0x3032, 0x3033, 0x3034, 0x3035, 0x303b]);
const LETTER_DIGIT = /^[\p{Ll}\p{Lo}\p{Lm}\p{Mn}\p{Mc}\p{Nd}]$/u;
const MARK = /^\p{M}/u;
const GREEK = /^\p{Script=Greek}$/u;
const HEBREW = /^\p{Script=Hebrew}$/u;
const KANA_HAN = /[\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Han}]/u;
const LETTER = /^\p{L}$/u;
// Canonical_Combining_Class=Virama (Unicode 14), which \p{} cannot name: the list in agentturn/forms/formats.py.
const VIRAMA =
  /^[\u{94d}\u{9cd}\u{a4d}\u{acd}\u{b4d}\u{bcd}\u{c4d}\u{ccd}\u{d3b}-\u{d3c}\u{d4d}\u{dca}\u{e3a}\u{eba}\u{f84}\u{1039}-\u{103a}\u{1714}-\u{1715}\u{1734}\u{17d2}\u{1a60}\u{1b44}\u{1baa}-\u{1bab}\u{1bf2}-\u{1bf3}\u{2d7f}\u{a806}\u{a82c}\u{a8c4}\u{a953}\u{a9c0}\u{aaf6}\u{abed}\u{10a3f}\u{11046}\u{11070}\u{1107f}\u{110b9}\u{11133}-\u{11134}\u{111c0}\u{11235}\u{112ea}\u{1134d}\u{11442}\u{114c2}\u{115bf}\u{1163f}\u{116b6}\u{1172b}\u{11839}\u{1193d}-\u{1193e}\u{119e0}\u{11a34}\u{11a47}\u{11a99}\u{11c3f}\u{11d44}-\u{11d45}\u{11d97}]$/u;
const isArabicIndic = (c) => c >= 0x660 && c <= 0x669;
const isExtendedArabicIndic = (c) => c >= 0x6f0 && c <= 0x6f9;

function idnaCharOk(label, at) {
  const code = label[at];
  const c = String.fromCodePoint(code);
  const before = at > 0 ? String.fromCodePoint(label[at - 1]) : "";
  const after = at + 1 < label.length ? String.fromCodePoint(label[at + 1]) : "";
  if (PVALID_EXCEPTIONS.has(code)) return true;
  if (DISALLOWED_EXCEPTIONS.has(code)) return false;
  if (code === 0xb7) return before === "l" && after === "l";
  if (code === 0x375) return after !== "" && GREEK.test(after);
  if (code === 0x5f3 || code === 0x5f4) return before !== "" && HEBREW.test(before);
  if (code === 0x30fb) return KANA_HAN.test(String.fromCodePoint(...label));
  if (isArabicIndic(code)) return !label.some(isExtendedArabicIndic);
  if (isExtendedArabicIndic(code)) return !label.some(isArabicIndic);
  if (code === 0x200d) return before !== "" && VIRAMA.test(before);
  if (code === 0x200c) {
    return before !== "" && (VIRAMA.test(before) || (LETTER.test(before) && after !== "" && LETTER.test(after)));
  }
  if (c === "-" || (c >= "a" && c <= "z") || (c >= "0" && c <= "9")) return true;
  return LETTER_DIGIT.test(c) && c.normalize("NFKC").toLowerCase() === c;
}

function aLabel(label) {
  const uLabel = punycodeDecode(label.slice(4));
  if (!uLabel || uLabel.length === 0 || uLabel.every((c) => c < 0x80)) return false;
  const text = String.fromCodePoint(...uLabel);
  const chars = [...text];
  if ((chars[2] === "-" && chars[3] === "-") || text.startsWith("-") || text.endsWith("-") || MARK.test(text)) return false;
  return uLabel.every((_, at) => idnaCharOk(uLabel, at));
}

function hostname(value) {
  if (value.length < 1 || [...value].length > 253) return false;
  return value.split(".").every((label) => HOST_LABEL.test(label) && (label.slice(0, 4).toLowerCase() !== "xn--" || aLabel(label)));
}

// ajv-formats' "url", checked in parts (linear; the single expression backtracks for seconds).
const URL_SCHEME = /^(?:https?|ftp):\/\//i;
const URL_IP =
  /^(?!(?:10|127)(?:\.\d{1,3}){3})(?!(?:169\.254|192\.168)(?:\.\d{1,3}){2})(?!172\.(?:1[6-9]|2\d|3[0-1])(?:\.\d{1,3}){2})(?:[1-9]\d?|1\d\d|2[01]\d|22[0-3])(?:\.(?:1?\d{1,2}|2[0-4]\d|25[0-5])){2}(?:\.(?:[1-9]\d?|1\d\d|2[0-4]\d|25[0-4]))$/;
const URL_LABEL = /^[a-zA-Z0-9\u{a1}-\u{ffff}]+(?:-[a-zA-Z0-9\u{a1}-\u{ffff}]+)*$/u;
const URL_TLD = /^[a-zA-Z\u{a1}-\u{ffff}]{2,}$/u;
const URL_PORT = /^\d{2,5}$/;
const JS_SPACE = /\s/u;

function urlHost(host) {
  if (URL_IP.test(host)) return true;
  const names = host.split(".");
  const tld = names.pop();
  return names.length > 0 && URL_TLD.test(tld) && names.every((name) => URL_LABEL.test(name));
}

function url(value) {
  const scheme = URL_SCHEME.exec(value);
  if (!scheme) return false;
  // Code points, as the server counts them.
  const rest = [...value.slice(scheme[0].length)];
  let firstSpace = rest.length;
  let lastSpace = -1;
  rest.forEach((c, at) => {
    if (JS_SPACE.test(c)) {
      if (firstSpace === rest.length) firstSpace = at;
      lastSpace = at;
    }
  });
  const find = (c, from) => {
    for (let at = from; at < rest.length; at++) if (rest[at] === c) return at;
    return -1;
  };
  const starts = [0];
  for (let runStart = 0; runStart <= rest.length; ) {
    let runEnd = find("/", runStart);
    if (runEnd < 0) runEnd = rest.length;
    for (let at = runEnd - 1; at >= runStart; at--) {
      if (rest[at] === "@") {
        starts.push(at + 1);
        break;
      }
    }
    runStart = runEnd + 1;
  }
  for (const start of starts) {
    let end = find("/", start);
    if (end < 0) end = rest.length;
    const authority = rest.slice(start, end).join("");
    if (authority.includes("@")) continue;
    if (start > 0 && (start - 1 === 0 || firstSpace < start - 1)) continue;
    if (lastSpace >= end) continue;
    const colon = authority.indexOf(":");
    const host = colon < 0 ? authority : authority.slice(0, colon);
    if (colon >= 0 && !URL_PORT.test(authority.slice(colon + 1))) continue;
    if (urlHost(host)) return true;
  }
  return false;
}

/** The definitions that replace ajv-formats' (each a function of the string). */
export const SUITE_FORMATS = {
  time,
  "date-time": dateTime,
  duration: (value) => DURATION.test(value),
  uri: (value) => uriReference(value, true),
  "uri-reference": (value) => uriReference(value),
  "uri-template": uriTemplate,
  url,
  email,
  hostname,
  uuid: (value) => /^[0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12}$/i.test(value),
};
