var blindrsa = (() => {
  var __defProp = Object.defineProperty;
  var __getOwnPropDesc = Object.getOwnPropertyDescriptor;
  var __getOwnPropNames = Object.getOwnPropertyNames;
  var __hasOwnProp = Object.prototype.hasOwnProperty;
  var __defNormalProp = (obj, key, value) => key in obj ? __defProp(obj, key, { enumerable: true, configurable: true, writable: true, value }) : obj[key] = value;
  var __require = /* @__PURE__ */ ((x) => typeof require !== "undefined" ? require : typeof Proxy !== "undefined" ? new Proxy(x, {
    get: (a, b) => (typeof require !== "undefined" ? require : a)[b]
  }) : x)(function(x) {
    if (typeof require !== "undefined") return require.apply(this, arguments);
    throw Error('Dynamic require of "' + x + '" is not supported');
  });
  var __export = (target, all) => {
    for (var name in all)
      __defProp(target, name, { get: all[name], enumerable: true });
  };
  var __copyProps = (to, from, except, desc) => {
    if (from && typeof from === "object" || typeof from === "function") {
      for (let key of __getOwnPropNames(from))
        if (!__hasOwnProp.call(to, key) && key !== except)
          __defProp(to, key, { get: () => from[key], enumerable: !(desc = __getOwnPropDesc(from, key)) || desc.enumerable });
    }
    return to;
  };
  var __toCommonJS = (mod) => __copyProps(__defProp({}, "__esModule", { value: true }), mod);
  var __publicField = (obj, key, value) => __defNormalProp(obj, typeof key !== "symbol" ? key + "" : key, value);

  // entry.js
  var entry_exports = {};
  __export(entry_exports, {
    BlindRSA: () => BlindRSA,
    RSABSSA: () => RSABSSA
  });

  // node_modules/@cloudflare/blindrsa-ts/lib/src/sjcl/index.js
  var sjcl = {
    /**
     * Symmetric ciphers.
     * @namespace
     */
    cipher: {},
    /**
     * Hash functions.  Right now only SHA256 is implemented.
     * @namespace
     */
    hash: {},
    /**
     * Key exchange functions.  Right now only SRP is implemented.
     * @namespace
     */
    keyexchange: {},
    /**
     * Cipher modes of operation.
     * @namespace
     */
    mode: {},
    /**
     * Miscellaneous.  HMAC and PBKDF2.
     * @namespace
     */
    misc: {},
    /**
     * Bit array encoders and decoders.
     * @namespace
     *
     * @description
     * The members of this namespace are functions which translate between
     * SJCL's bitArrays and other objects (usually strings).  Because it
     * isn't always clear which direction is encoding and which is decoding,
     * the method names are "fromBits" and "toBits".
     */
    codec: {},
    /**
     * Exceptions.
     * @namespace
     */
    exception: {
      /**
       * Ciphertext is corrupt.
       * @constructor
       */
      corrupt: function(message) {
        this.toString = function() {
          return "CORRUPT: " + this.message;
        };
        this.message = message;
      },
      /**
       * Invalid parameter.
       * @constructor
       */
      invalid: function(message) {
        this.toString = function() {
          return "INVALID: " + this.message;
        };
        this.message = message;
      },
      /**
       * Bug or missing feature in SJCL.
       * @constructor
       */
      bug: function(message) {
        this.toString = function() {
          return "BUG: " + this.message;
        };
        this.message = message;
      },
      /**
       * Something isn't ready.
       * @constructor
       */
      notReady: function(message) {
        this.toString = function() {
          return "NOT READY: " + this.message;
        };
        this.message = message;
      }
    }
  };
  sjcl.cipher.aes = function(key) {
    if (!this._tables[0][0][0]) {
      this._precompute();
    }
    var i, j, tmp, encKey, decKey, sbox = this._tables[0][4], decTable = this._tables[1], keyLen = key.length, rcon = 1;
    if (keyLen !== 4 && keyLen !== 6 && keyLen !== 8) {
      throw new sjcl.exception.invalid("invalid aes key size");
    }
    this._key = [encKey = key.slice(0), decKey = []];
    for (i = keyLen; i < 4 * keyLen + 28; i++) {
      tmp = encKey[i - 1];
      if (i % keyLen === 0 || keyLen === 8 && i % keyLen === 4) {
        tmp = sbox[tmp >>> 24] << 24 ^ sbox[tmp >> 16 & 255] << 16 ^ sbox[tmp >> 8 & 255] << 8 ^ sbox[tmp & 255];
        if (i % keyLen === 0) {
          tmp = tmp << 8 ^ tmp >>> 24 ^ rcon << 24;
          rcon = rcon << 1 ^ (rcon >> 7) * 283;
        }
      }
      encKey[i] = encKey[i - keyLen] ^ tmp;
    }
    for (j = 0; i; j++, i--) {
      tmp = encKey[j & 3 ? i : i - 4];
      if (i <= 4 || j < 4) {
        decKey[j] = tmp;
      } else {
        decKey[j] = decTable[0][sbox[tmp >>> 24]] ^ decTable[1][sbox[tmp >> 16 & 255]] ^ decTable[2][sbox[tmp >> 8 & 255]] ^ decTable[3][sbox[tmp & 255]];
      }
    }
  };
  sjcl.cipher.aes.prototype = {
    // public
    /* Something like this might appear here eventually
    name: "AES",
    blockSize: 4,
    keySizes: [4,6,8],
    */
    /**
     * Encrypt an array of 4 big-endian words.
     * @param {Array} data The plaintext.
     * @return {Array} The ciphertext.
     */
    encrypt: function(data) {
      return this._crypt(data, 0);
    },
    /**
     * Decrypt an array of 4 big-endian words.
     * @param {Array} data The ciphertext.
     * @return {Array} The plaintext.
     */
    decrypt: function(data) {
      return this._crypt(data, 1);
    },
    /**
     * The expanded S-box and inverse S-box tables.  These will be computed
     * on the client so that we don't have to send them down the wire.
     *
     * There are two tables, _tables[0] is for encryption and
     * _tables[1] is for decryption.
     *
     * The first 4 sub-tables are the expanded S-box with MixColumns.  The
     * last (_tables[01][4]) is the S-box itself.
     *
     * @private
     */
    _tables: [[[], [], [], [], []], [[], [], [], [], []]],
    /**
     * Expand the S-box tables.
     *
     * @private
     */
    _precompute: function() {
      var encTable = this._tables[0], decTable = this._tables[1], sbox = encTable[4], sboxInv = decTable[4], i, x, xInv, d = [], th = [], x2, x4, x8, s, tEnc, tDec;
      for (i = 0; i < 256; i++) {
        th[(d[i] = i << 1 ^ (i >> 7) * 283) ^ i] = i;
      }
      for (x = xInv = 0; !sbox[x]; x ^= x2 || 1, xInv = th[xInv] || 1) {
        s = xInv ^ xInv << 1 ^ xInv << 2 ^ xInv << 3 ^ xInv << 4;
        s = s >> 8 ^ s & 255 ^ 99;
        sbox[x] = s;
        sboxInv[s] = x;
        x8 = d[x4 = d[x2 = d[x]]];
        tDec = x8 * 16843009 ^ x4 * 65537 ^ x2 * 257 ^ x * 16843008;
        tEnc = d[s] * 257 ^ s * 16843008;
        for (i = 0; i < 4; i++) {
          encTable[i][x] = tEnc = tEnc << 24 ^ tEnc >>> 8;
          decTable[i][s] = tDec = tDec << 24 ^ tDec >>> 8;
        }
      }
      for (i = 0; i < 5; i++) {
        encTable[i] = encTable[i].slice(0);
        decTable[i] = decTable[i].slice(0);
      }
    },
    /**
     * Encryption and decryption core.
     * @param {Array} input Four words to be encrypted or decrypted.
     * @param dir The direction, 0 for encrypt and 1 for decrypt.
     * @return {Array} The four encrypted or decrypted words.
     * @private
     */
    _crypt: function(input, dir) {
      if (input.length !== 4) {
        throw new sjcl.exception.invalid("invalid aes block size");
      }
      var key = this._key[dir], a = input[0] ^ key[0], b = input[dir ? 3 : 1] ^ key[1], c = input[2] ^ key[2], d = input[dir ? 1 : 3] ^ key[3], a2, b2, c2, nInnerRounds = key.length / 4 - 2, i, kIndex = 4, out = [0, 0, 0, 0], table = this._tables[dir], t0 = table[0], t1 = table[1], t2 = table[2], t3 = table[3], sbox = table[4];
      for (i = 0; i < nInnerRounds; i++) {
        a2 = t0[a >>> 24] ^ t1[b >> 16 & 255] ^ t2[c >> 8 & 255] ^ t3[d & 255] ^ key[kIndex];
        b2 = t0[b >>> 24] ^ t1[c >> 16 & 255] ^ t2[d >> 8 & 255] ^ t3[a & 255] ^ key[kIndex + 1];
        c2 = t0[c >>> 24] ^ t1[d >> 16 & 255] ^ t2[a >> 8 & 255] ^ t3[b & 255] ^ key[kIndex + 2];
        d = t0[d >>> 24] ^ t1[a >> 16 & 255] ^ t2[b >> 8 & 255] ^ t3[c & 255] ^ key[kIndex + 3];
        kIndex += 4;
        a = a2;
        b = b2;
        c = c2;
      }
      for (i = 0; i < 4; i++) {
        out[dir ? 3 & -i : i] = sbox[a >>> 24] << 24 ^ sbox[b >> 16 & 255] << 16 ^ sbox[c >> 8 & 255] << 8 ^ sbox[d & 255] ^ key[kIndex++];
        a2 = a;
        a = b;
        b = c;
        c = d;
        d = a2;
      }
      return out;
    }
  };
  sjcl.bitArray = {
    /**
     * Array slices in units of bits.
     * @param {bitArray} a The array to slice.
     * @param {Number} bstart The offset to the start of the slice, in bits.
     * @param {Number} bend The offset to the end of the slice, in bits.  If this is undefined,
     * slice until the end of the array.
     * @return {bitArray} The requested slice.
     */
    bitSlice: function(a, bstart, bend) {
      a = sjcl.bitArray._shiftRight(a.slice(bstart / 32), 32 - (bstart & 31)).slice(1);
      return bend === void 0 ? a : sjcl.bitArray.clamp(a, bend - bstart);
    },
    /**
     * Extract a number packed into a bit array.
     * @param {bitArray} a The array to slice.
     * @param {Number} bstart The offset to the start of the slice, in bits.
     * @param {Number} blength The length of the number to extract.
     * @return {Number} The requested slice.
     */
    extract: function(a, bstart, blength) {
      var x, sh = Math.floor(-bstart - blength & 31);
      if ((bstart + blength - 1 ^ bstart) & -32) {
        x = a[bstart / 32 | 0] << 32 - sh ^ a[bstart / 32 + 1 | 0] >>> sh;
      } else {
        x = a[bstart / 32 | 0] >>> sh;
      }
      return x & (1 << blength) - 1;
    },
    /**
     * Concatenate two bit arrays.
     * @param {bitArray} a1 The first array.
     * @param {bitArray} a2 The second array.
     * @return {bitArray} The concatenation of a1 and a2.
     */
    concat: function(a1, a2) {
      if (a1.length === 0 || a2.length === 0) {
        return a1.concat(a2);
      }
      var last = a1[a1.length - 1], shift = sjcl.bitArray.getPartial(last);
      if (shift === 32) {
        return a1.concat(a2);
      } else {
        return sjcl.bitArray._shiftRight(a2, shift, last | 0, a1.slice(0, a1.length - 1));
      }
    },
    /**
     * Find the length of an array of bits.
     * @param {bitArray} a The array.
     * @return {Number} The length of a, in bits.
     */
    bitLength: function(a) {
      var l = a.length, x;
      if (l === 0) {
        return 0;
      }
      x = a[l - 1];
      return (l - 1) * 32 + sjcl.bitArray.getPartial(x);
    },
    /**
     * Truncate an array.
     * @param {bitArray} a The array.
     * @param {Number} len The length to truncate to, in bits.
     * @return {bitArray} A new array, truncated to len bits.
     */
    clamp: function(a, len) {
      if (a.length * 32 < len) {
        return a;
      }
      a = a.slice(0, Math.ceil(len / 32));
      var l = a.length;
      len = len & 31;
      if (l > 0 && len) {
        a[l - 1] = sjcl.bitArray.partial(len, a[l - 1] & 2147483648 >> len - 1, 1);
      }
      return a;
    },
    /**
     * Make a partial word for a bit array.
     * @param {Number} len The number of bits in the word.
     * @param {Number} x The bits.
     * @param {Number} [_end=0] Pass 1 if x has already been shifted to the high side.
     * @return {Number} The partial word.
     */
    partial: function(len, x, _end) {
      if (len === 32) {
        return x;
      }
      return (_end ? x | 0 : x << 32 - len) + len * 1099511627776;
    },
    /**
     * Get the number of bits used by a partial word.
     * @param {Number} x The partial word.
     * @return {Number} The number of bits used by the partial word.
     */
    getPartial: function(x) {
      return Math.round(x / 1099511627776) || 32;
    },
    /**
     * Compare two arrays for equality in a predictable amount of time.
     * @param {bitArray} a The first array.
     * @param {bitArray} b The second array.
     * @return {boolean} true if a == b; false otherwise.
     */
    equal: function(a, b) {
      if (sjcl.bitArray.bitLength(a) !== sjcl.bitArray.bitLength(b)) {
        return false;
      }
      var x = 0, i;
      for (i = 0; i < a.length; i++) {
        x |= a[i] ^ b[i];
      }
      return x === 0;
    },
    /** Shift an array right.
     * @param {bitArray} a The array to shift.
     * @param {Number} shift The number of bits to shift.
     * @param {Number} [carry=0] A byte to carry in
     * @param {bitArray} [out=[]] An array to prepend to the output.
     * @private
     */
    _shiftRight: function(a, shift, carry, out) {
      var i, last2 = 0, shift2;
      if (out === void 0) {
        out = [];
      }
      for (; shift >= 32; shift -= 32) {
        out.push(carry);
        carry = 0;
      }
      if (shift === 0) {
        return out.concat(a);
      }
      for (i = 0; i < a.length; i++) {
        out.push(carry | a[i] >>> shift);
        carry = a[i] << 32 - shift;
      }
      last2 = a.length ? a[a.length - 1] : 0;
      shift2 = sjcl.bitArray.getPartial(last2);
      out.push(sjcl.bitArray.partial(shift + shift2 & 31, shift + shift2 > 32 ? carry : out.pop(), 1));
      return out;
    },
    /** xor a block of 4 words together.
     * @private
     */
    _xor4: function(x, y) {
      return [x[0] ^ y[0], x[1] ^ y[1], x[2] ^ y[2], x[3] ^ y[3]];
    },
    /** byteswap a word array inplace.
     * (does not handle partial words)
     * @param {sjcl.bitArray} a word array
     * @return {sjcl.bitArray} byteswapped array
     */
    byteswapM: function(a) {
      var i, v, m = 65280;
      for (i = 0; i < a.length; ++i) {
        v = a[i];
        a[i] = v >>> 24 | v >>> 8 & m | (v & m) << 8 | v << 24;
      }
      return a;
    }
  };
  sjcl.codec.utf8String = {
    /** Convert from a bitArray to a UTF-8 string. */
    fromBits: function(arr) {
      var out = "", bl = sjcl.bitArray.bitLength(arr), i, tmp;
      for (i = 0; i < bl / 8; i++) {
        if ((i & 3) === 0) {
          tmp = arr[i / 4];
        }
        out += String.fromCharCode(tmp >>> 8 >>> 8 >>> 8);
        tmp <<= 8;
      }
      return decodeURIComponent(escape(out));
    },
    /** Convert from a UTF-8 string to a bitArray. */
    toBits: function(str) {
      str = unescape(encodeURIComponent(str));
      var out = [], i, tmp = 0;
      for (i = 0; i < str.length; i++) {
        tmp = tmp << 8 | str.charCodeAt(i);
        if ((i & 3) === 3) {
          out.push(tmp);
          tmp = 0;
        }
      }
      if (i & 3) {
        out.push(sjcl.bitArray.partial(8 * (i & 3), tmp));
      }
      return out;
    }
  };
  sjcl.codec.hex = {
    /** Convert from a bitArray to a hex string. */
    fromBits: function(arr) {
      var out = "", i;
      for (i = 0; i < arr.length; i++) {
        out += ((arr[i] | 0) + 263882790666240).toString(16).substr(4);
      }
      return out.substr(0, sjcl.bitArray.bitLength(arr) / 4);
    },
    /** Convert from a hex string to a bitArray. */
    toBits: function(str) {
      var i, out = [], len;
      str = str.replace(/\s|0x/g, "");
      len = str.length;
      str = str + "00000000";
      for (i = 0; i < str.length; i += 8) {
        out.push(parseInt(str.substr(i, 8), 16) ^ 0);
      }
      return sjcl.bitArray.clamp(out, len * 4);
    }
  };
  sjcl.codec.base64 = {
    /** The base64 alphabet.
     * @private
     */
    _chars: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
    /** Convert from a bitArray to a base64 string. */
    fromBits: function(arr, _noEquals, _url) {
      var out = "", i, bits = 0, c = sjcl.codec.base64._chars, ta = 0, bl = sjcl.bitArray.bitLength(arr);
      if (_url) {
        c = c.substr(0, 62) + "-_";
      }
      for (i = 0; out.length * 6 < bl; ) {
        out += c.charAt((ta ^ arr[i] >>> bits) >>> 26);
        if (bits < 6) {
          ta = arr[i] << 6 - bits;
          bits += 26;
          i++;
        } else {
          ta <<= 6;
          bits -= 6;
        }
      }
      while (out.length & 3 && !_noEquals) {
        out += "=";
      }
      return out;
    },
    /** Convert from a base64 string to a bitArray */
    toBits: function(str, _url) {
      str = str.replace(/\s|=/g, "");
      var out = [], i, bits = 0, c = sjcl.codec.base64._chars, ta = 0, x;
      if (_url) {
        c = c.substr(0, 62) + "-_";
      }
      for (i = 0; i < str.length; i++) {
        x = c.indexOf(str.charAt(i));
        if (x < 0) {
          throw new sjcl.exception.invalid("this isn't base64!");
        }
        if (bits > 26) {
          bits -= 26;
          out.push(ta ^ x >>> bits);
          ta = x << 32 - bits;
        } else {
          bits += 6;
          ta ^= x << 32 - bits;
        }
      }
      if (bits & 56) {
        out.push(sjcl.bitArray.partial(bits & 56, ta, 1));
      }
      return out;
    }
  };
  sjcl.codec.base64url = {
    fromBits: function(arr) {
      return sjcl.codec.base64.fromBits(arr, 1, 1);
    },
    toBits: function(str) {
      return sjcl.codec.base64.toBits(str, 1);
    }
  };
  sjcl.codec.bytes = {
    /** Convert from a bitArray to an array of bytes. */
    fromBits: function(arr) {
      var out = [], bl = sjcl.bitArray.bitLength(arr), i, tmp;
      for (i = 0; i < bl / 8; i++) {
        if ((i & 3) === 0) {
          tmp = arr[i / 4];
        }
        out.push(tmp >>> 24);
        tmp <<= 8;
      }
      return out;
    },
    /** Convert from an array of bytes to a bitArray. */
    toBits: function(bytes) {
      var out = [], i, tmp = 0;
      for (i = 0; i < bytes.length; i++) {
        tmp = tmp << 8 | bytes[i];
        if ((i & 3) === 3) {
          out.push(tmp);
          tmp = 0;
        }
      }
      if (i & 3) {
        out.push(sjcl.bitArray.partial(8 * (i & 3), tmp));
      }
      return out;
    }
  };
  sjcl.hash.sha256 = function(hash) {
    if (!this._key[0]) {
      this._precompute();
    }
    if (hash) {
      this._h = hash._h.slice(0);
      this._buffer = hash._buffer.slice(0);
      this._length = hash._length;
    } else {
      this.reset();
    }
  };
  sjcl.hash.sha256.hash = function(data) {
    return new sjcl.hash.sha256().update(data).finalize();
  };
  sjcl.hash.sha256.prototype = {
    /**
     * The hash's block size, in bits.
     * @constant
     */
    blockSize: 512,
    /**
     * Reset the hash state.
     * @return this
     */
    reset: function() {
      this._h = this._init.slice(0);
      this._buffer = [];
      this._length = 0;
      return this;
    },
    /**
     * Input several words to the hash.
     * @param {bitArray|String} data the data to hash.
     * @return this
     */
    update: function(data) {
      if (typeof data === "string") {
        data = sjcl.codec.utf8String.toBits(data);
      }
      var i, b = this._buffer = sjcl.bitArray.concat(this._buffer, data), ol = this._length, nl = this._length = ol + sjcl.bitArray.bitLength(data);
      if (nl > 9007199254740991) {
        throw new sjcl.exception.invalid("Cannot hash more than 2^53 - 1 bits");
      }
      if (typeof Uint32Array !== "undefined") {
        var c = new Uint32Array(b);
        var j = 0;
        for (i = 512 + ol - (512 + ol & 511); i <= nl; i += 512) {
          this._block(c.subarray(16 * j, 16 * (j + 1)));
          j += 1;
        }
        b.splice(0, 16 * j);
      } else {
        for (i = 512 + ol - (512 + ol & 511); i <= nl; i += 512) {
          this._block(b.splice(0, 16));
        }
      }
      return this;
    },
    /**
     * Complete hashing and output the hash value.
     * @return {bitArray} The hash value, an array of 8 big-endian words.
     */
    finalize: function() {
      var i, b = this._buffer, h = this._h;
      b = sjcl.bitArray.concat(b, [sjcl.bitArray.partial(1, 1)]);
      for (i = b.length + 2; i & 15; i++) {
        b.push(0);
      }
      b.push(Math.floor(this._length / 4294967296));
      b.push(this._length | 0);
      while (b.length) {
        this._block(b.splice(0, 16));
      }
      this.reset();
      return h;
    },
    /**
     * The SHA-256 initialization vector, to be precomputed.
     * @private
     */
    _init: [],
    /*
    _init:[0x6a09e667,0xbb67ae85,0x3c6ef372,0xa54ff53a,0x510e527f,0x9b05688c,0x1f83d9ab,0x5be0cd19],
    */
    /**
     * The SHA-256 hash key, to be precomputed.
     * @private
     */
    _key: [],
    /*
    _key:
      [0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
       0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
       0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
       0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
       0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
       0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
       0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
       0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2],
    */
    /**
     * Function to precompute _init and _key.
     * @private
     */
    _precompute: function() {
      var i = 0, prime = 2, factor, isPrime;
      function frac(x) {
        return (x - Math.floor(x)) * 4294967296 | 0;
      }
      for (; i < 64; prime++) {
        isPrime = true;
        for (factor = 2; factor * factor <= prime; factor++) {
          if (prime % factor === 0) {
            isPrime = false;
            break;
          }
        }
        if (isPrime) {
          if (i < 8) {
            this._init[i] = frac(Math.pow(prime, 1 / 2));
          }
          this._key[i] = frac(Math.pow(prime, 1 / 3));
          i++;
        }
      }
    },
    /**
     * Perform one cycle of SHA-256.
     * @param {Uint32Array|bitArray} w one block of words.
     * @private
     */
    _block: function(w) {
      var i, tmp, a, b, h = this._h, k = this._key, h0 = h[0], h1 = h[1], h2 = h[2], h3 = h[3], h4 = h[4], h5 = h[5], h6 = h[6], h7 = h[7];
      for (i = 0; i < 64; i++) {
        if (i < 16) {
          tmp = w[i];
        } else {
          a = w[i + 1 & 15];
          b = w[i + 14 & 15];
          tmp = w[i & 15] = (a >>> 7 ^ a >>> 18 ^ a >>> 3 ^ a << 25 ^ a << 14) + (b >>> 17 ^ b >>> 19 ^ b >>> 10 ^ b << 15 ^ b << 13) + w[i & 15] + w[i + 9 & 15] | 0;
        }
        tmp = tmp + h7 + (h4 >>> 6 ^ h4 >>> 11 ^ h4 >>> 25 ^ h4 << 26 ^ h4 << 21 ^ h4 << 7) + (h6 ^ h4 & (h5 ^ h6)) + k[i];
        h7 = h6;
        h6 = h5;
        h5 = h4;
        h4 = h3 + tmp | 0;
        h3 = h2;
        h2 = h1;
        h1 = h0;
        h0 = tmp + (h1 & h2 ^ h3 & (h1 ^ h2)) + (h1 >>> 2 ^ h1 >>> 13 ^ h1 >>> 22 ^ h1 << 30 ^ h1 << 19 ^ h1 << 10) | 0;
      }
      h[0] = h[0] + h0 | 0;
      h[1] = h[1] + h1 | 0;
      h[2] = h[2] + h2 | 0;
      h[3] = h[3] + h3 | 0;
      h[4] = h[4] + h4 | 0;
      h[5] = h[5] + h5 | 0;
      h[6] = h[6] + h6 | 0;
      h[7] = h[7] + h7 | 0;
    }
  };
  sjcl.mode.ccm = {
    /** The name of the mode.
     * @constant
     */
    name: "ccm",
    _progressListeners: [],
    listenProgress: function(cb) {
      sjcl.mode.ccm._progressListeners.push(cb);
    },
    unListenProgress: function(cb) {
      var index = sjcl.mode.ccm._progressListeners.indexOf(cb);
      if (index > -1) {
        sjcl.mode.ccm._progressListeners.splice(index, 1);
      }
    },
    _callProgressListener: function(val) {
      var p = sjcl.mode.ccm._progressListeners.slice(), i;
      for (i = 0; i < p.length; i += 1) {
        p[i](val);
      }
    },
    /** Encrypt in CCM mode.
     * @static
     * @param {Object} prf The pseudorandom function.  It must have a block size of 16 bytes.
     * @param {bitArray} plaintext The plaintext data.
     * @param {bitArray} iv The initialization value.
     * @param {bitArray} [adata=[]] The authenticated data.
     * @param {Number} [tlen=64] the desired tag length, in bits.
     * @return {bitArray} The encrypted data, an array of bytes.
     */
    encrypt: function(prf, plaintext, iv, adata, tlen) {
      var L, out = plaintext.slice(0), tag, w = sjcl.bitArray, ivl = w.bitLength(iv) / 8, ol = w.bitLength(out) / 8;
      tlen = tlen || 64;
      adata = adata || [];
      if (ivl < 7) {
        throw new sjcl.exception.invalid("ccm: iv must be at least 7 bytes");
      }
      for (L = 2; L < 4 && ol >>> 8 * L; L++) {
      }
      if (L < 15 - ivl) {
        L = 15 - ivl;
      }
      iv = w.clamp(iv, 8 * (15 - L));
      tag = sjcl.mode.ccm._computeTag(prf, plaintext, iv, adata, tlen, L);
      out = sjcl.mode.ccm._ctrMode(prf, out, iv, tag, tlen, L);
      return w.concat(out.data, out.tag);
    },
    /** Decrypt in CCM mode.
     * @static
     * @param {Object} prf The pseudorandom function.  It must have a block size of 16 bytes.
     * @param {bitArray} ciphertext The ciphertext data.
     * @param {bitArray} iv The initialization value.
     * @param {bitArray} [adata=[]] adata The authenticated data.
     * @param {Number} [tlen=64] tlen the desired tag length, in bits.
     * @return {bitArray} The decrypted data.
     */
    decrypt: function(prf, ciphertext, iv, adata, tlen) {
      tlen = tlen || 64;
      adata = adata || [];
      var L, w = sjcl.bitArray, ivl = w.bitLength(iv) / 8, ol = w.bitLength(ciphertext), out = w.clamp(ciphertext, ol - tlen), tag = w.bitSlice(ciphertext, ol - tlen), tag2;
      ol = (ol - tlen) / 8;
      if (ivl < 7) {
        throw new sjcl.exception.invalid("ccm: iv must be at least 7 bytes");
      }
      for (L = 2; L < 4 && ol >>> 8 * L; L++) {
      }
      if (L < 15 - ivl) {
        L = 15 - ivl;
      }
      iv = w.clamp(iv, 8 * (15 - L));
      out = sjcl.mode.ccm._ctrMode(prf, out, iv, tag, tlen, L);
      tag2 = sjcl.mode.ccm._computeTag(prf, out.data, iv, adata, tlen, L);
      if (!w.equal(out.tag, tag2)) {
        throw new sjcl.exception.corrupt("ccm: tag doesn't match");
      }
      return out.data;
    },
    _macAdditionalData: function(prf, adata, iv, tlen, ol, L) {
      var mac, tmp, i, macData = [], w = sjcl.bitArray, xor2 = w._xor4;
      mac = [w.partial(8, (adata.length ? 1 << 6 : 0) | tlen - 2 << 2 | L - 1)];
      mac = w.concat(mac, iv);
      mac[3] |= ol;
      mac = prf.encrypt(mac);
      if (adata.length) {
        tmp = w.bitLength(adata) / 8;
        if (tmp <= 65279) {
          macData = [w.partial(16, tmp)];
        } else if (tmp <= 4294967295) {
          macData = w.concat([w.partial(16, 65534)], [tmp]);
        }
        macData = w.concat(macData, adata);
        for (i = 0; i < macData.length; i += 4) {
          mac = prf.encrypt(xor2(mac, macData.slice(i, i + 4).concat([0, 0, 0])));
        }
      }
      return mac;
    },
    /* Compute the (unencrypted) authentication tag, according to the CCM specification
     * @param {Object} prf The pseudorandom function.
     * @param {bitArray} plaintext The plaintext data.
     * @param {bitArray} iv The initialization value.
     * @param {bitArray} adata The authenticated data.
     * @param {Number} tlen the desired tag length, in bits.
     * @return {bitArray} The tag, but not yet encrypted.
     * @private
     */
    _computeTag: function(prf, plaintext, iv, adata, tlen, L) {
      var mac, i, w = sjcl.bitArray, xor2 = w._xor4;
      tlen /= 8;
      if (tlen % 2 || tlen < 4 || tlen > 16) {
        throw new sjcl.exception.invalid("ccm: invalid tag length");
      }
      if (adata.length > 4294967295 || plaintext.length > 4294967295) {
        throw new sjcl.exception.bug("ccm: can't deal with 4GiB or more data");
      }
      mac = sjcl.mode.ccm._macAdditionalData(prf, adata, iv, tlen, w.bitLength(plaintext) / 8, L);
      for (i = 0; i < plaintext.length; i += 4) {
        mac = prf.encrypt(xor2(mac, plaintext.slice(i, i + 4).concat([0, 0, 0])));
      }
      return w.clamp(mac, tlen * 8);
    },
    /** CCM CTR mode.
     * Encrypt or decrypt data and tag with the prf in CCM-style CTR mode.
     * May mutate its arguments.
     * @param {Object} prf The PRF.
     * @param {bitArray} data The data to be encrypted or decrypted.
     * @param {bitArray} iv The initialization vector.
     * @param {bitArray} tag The authentication tag.
     * @param {Number} tlen The length of th etag, in bits.
     * @param {Number} L The CCM L value.
     * @return {Object} An object with data and tag, the en/decryption of data and tag values.
     * @private
     */
    _ctrMode: function(prf, data, iv, tag, tlen, L) {
      var enc, i, w = sjcl.bitArray, xor2 = w._xor4, ctr, l = data.length, bl = w.bitLength(data), n = l / 50, p = n;
      ctr = w.concat([w.partial(8, L - 1)], iv).concat([0, 0, 0]).slice(0, 4);
      tag = w.bitSlice(xor2(tag, prf.encrypt(ctr)), 0, tlen);
      if (!l) {
        return { tag, data: [] };
      }
      for (i = 0; i < l; i += 4) {
        if (i > n) {
          sjcl.mode.ccm._callProgressListener(i / l);
          n += p;
        }
        ctr[3]++;
        enc = prf.encrypt(ctr);
        data[i] ^= enc[0];
        data[i + 1] ^= enc[1];
        data[i + 2] ^= enc[2];
        data[i + 3] ^= enc[3];
      }
      return { tag, data: w.clamp(data, bl) };
    }
  };
  sjcl.misc.hmac = function(key, Hash) {
    this._hash = Hash = Hash || sjcl.hash.sha256;
    var exKey = [[], []], i, bs = Hash.prototype.blockSize / 32;
    this._baseHash = [new Hash(), new Hash()];
    if (key.length > bs) {
      key = Hash.hash(key);
    }
    for (i = 0; i < bs; i++) {
      exKey[0][i] = key[i] ^ 909522486;
      exKey[1][i] = key[i] ^ 1549556828;
    }
    this._baseHash[0].update(exKey[0]);
    this._baseHash[1].update(exKey[1]);
    this._resultHash = new Hash(this._baseHash[0]);
  };
  sjcl.misc.hmac.prototype.encrypt = sjcl.misc.hmac.prototype.mac = function(data) {
    if (!this._updated) {
      this.update(data);
      return this.digest(data);
    } else {
      throw new sjcl.exception.invalid("encrypt on already updated hmac called!");
    }
  };
  sjcl.misc.hmac.prototype.reset = function() {
    this._resultHash = new this._hash(this._baseHash[0]);
    this._updated = false;
  };
  sjcl.misc.hmac.prototype.update = function(data) {
    this._updated = true;
    this._resultHash.update(data);
  };
  sjcl.misc.hmac.prototype.digest = function() {
    var w = this._resultHash.finalize(), result = new this._hash(this._baseHash[1]).update(w).finalize();
    this.reset();
    return result;
  };
  sjcl.misc.pbkdf2 = function(password, salt, count, length, Prff) {
    count = count || 1e4;
    if (length < 0 || count < 0) {
      throw new sjcl.exception.invalid("invalid params to pbkdf2");
    }
    if (typeof password === "string") {
      password = sjcl.codec.utf8String.toBits(password);
    }
    if (typeof salt === "string") {
      salt = sjcl.codec.utf8String.toBits(salt);
    }
    Prff = Prff || sjcl.misc.hmac;
    var prf = new Prff(password), u, ui, i, j, k, out = [], b = sjcl.bitArray;
    for (k = 1; 32 * out.length < (length || 1); k++) {
      u = ui = prf.encrypt(b.concat(salt, [k]));
      for (i = 1; i < count; i++) {
        ui = prf.encrypt(ui);
        for (j = 0; j < ui.length; j++) {
          u[j] ^= ui[j];
        }
      }
      out = out.concat(u);
    }
    if (length) {
      out = b.clamp(out, length);
    }
    return out;
  };
  sjcl.prng = function(defaultParanoia) {
    this._pools = [new sjcl.hash.sha256()];
    this._poolEntropy = [0];
    this._reseedCount = 0;
    this._robins = {};
    this._eventId = 0;
    this._collectorIds = {};
    this._collectorIdNext = 0;
    this._strength = 0;
    this._poolStrength = 0;
    this._nextReseed = 0;
    this._key = [0, 0, 0, 0, 0, 0, 0, 0];
    this._counter = [0, 0, 0, 0];
    this._cipher = void 0;
    this._defaultParanoia = defaultParanoia;
    this._collectorsStarted = false;
    this._callbacks = { progress: {}, seeded: {} };
    this._callbackI = 0;
    this._NOT_READY = 0;
    this._READY = 1;
    this._REQUIRES_RESEED = 2;
    this._MAX_WORDS_PER_BURST = 65536;
    this._PARANOIA_LEVELS = [0, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024];
    this._MILLISECONDS_PER_RESEED = 3e4;
    this._BITS_PER_RESEED = 80;
  };
  sjcl.prng.prototype = {
    /** Generate several random words, and return them in an array.
     * A word consists of 32 bits (4 bytes)
     * @param {Number} nwords The number of words to generate.
     */
    randomWords: function(nwords, paranoia) {
      var out = [], i, readiness = this.isReady(paranoia), g;
      if (readiness === this._NOT_READY) {
        throw new sjcl.exception.notReady("generator isn't seeded");
      } else if (readiness & this._REQUIRES_RESEED) {
        this._reseedFromPools(!(readiness & this._READY));
      }
      for (i = 0; i < nwords; i += 4) {
        if ((i + 1) % this._MAX_WORDS_PER_BURST === 0) {
          this._gate();
        }
        g = this._gen4words();
        out.push(g[0], g[1], g[2], g[3]);
      }
      this._gate();
      return out.slice(0, nwords);
    },
    setDefaultParanoia: function(paranoia, allowZeroParanoia) {
      if (paranoia === 0 && allowZeroParanoia !== "Setting paranoia=0 will ruin your security; use it only for testing") {
        throw new sjcl.exception.invalid("Setting paranoia=0 will ruin your security; use it only for testing");
      }
      this._defaultParanoia = paranoia;
    },
    /**
     * Add entropy to the pools.
     * @param data The entropic value.  Should be a 32-bit integer, array of 32-bit integers, or string
     * @param {Number} estimatedEntropy The estimated entropy of data, in bits
     * @param {String} source The source of the entropy, eg "mouse"
     */
    addEntropy: function(data, estimatedEntropy, source) {
      source = source || "user";
      var id, i, tmp, t = (/* @__PURE__ */ new Date()).valueOf(), robin = this._robins[source], oldReady = this.isReady(), err = 0, objName;
      id = this._collectorIds[source];
      if (id === void 0) {
        id = this._collectorIds[source] = this._collectorIdNext++;
      }
      if (robin === void 0) {
        robin = this._robins[source] = 0;
      }
      this._robins[source] = (this._robins[source] + 1) % this._pools.length;
      switch (typeof data) {
        case "number":
          if (estimatedEntropy === void 0) {
            estimatedEntropy = 1;
          }
          this._pools[robin].update([id, this._eventId++, 1, estimatedEntropy, t, 1, data | 0]);
          break;
        case "object":
          objName = Object.prototype.toString.call(data);
          if (objName === "[object Uint32Array]") {
            tmp = [];
            for (i = 0; i < data.length; i++) {
              tmp.push(data[i]);
            }
            data = tmp;
          } else {
            if (objName !== "[object Array]") {
              err = 1;
            }
            for (i = 0; i < data.length && !err; i++) {
              if (typeof data[i] !== "number") {
                err = 1;
              }
            }
          }
          if (!err) {
            if (estimatedEntropy === void 0) {
              estimatedEntropy = 0;
              for (i = 0; i < data.length; i++) {
                tmp = data[i];
                while (tmp > 0) {
                  estimatedEntropy++;
                  tmp = tmp >>> 1;
                }
              }
            }
            this._pools[robin].update([id, this._eventId++, 2, estimatedEntropy, t, data.length].concat(data));
          }
          break;
        case "string":
          if (estimatedEntropy === void 0) {
            estimatedEntropy = data.length;
          }
          this._pools[robin].update([id, this._eventId++, 3, estimatedEntropy, t, data.length]);
          this._pools[robin].update(data);
          break;
        default:
          err = 1;
      }
      if (err) {
        throw new sjcl.exception.bug("random: addEntropy only supports number, array of numbers or string");
      }
      this._poolEntropy[robin] += estimatedEntropy;
      this._poolStrength += estimatedEntropy;
      if (oldReady === this._NOT_READY) {
        if (this.isReady() !== this._NOT_READY) {
          this._fireEvent("seeded", Math.max(this._strength, this._poolStrength));
        }
        this._fireEvent("progress", this.getProgress());
      }
    },
    /** Is the generator ready? */
    isReady: function(paranoia) {
      var entropyRequired = this._PARANOIA_LEVELS[paranoia !== void 0 ? paranoia : this._defaultParanoia];
      if (this._strength && this._strength >= entropyRequired) {
        return this._poolEntropy[0] > this._BITS_PER_RESEED && (/* @__PURE__ */ new Date()).valueOf() > this._nextReseed ? this._REQUIRES_RESEED | this._READY : this._READY;
      } else {
        return this._poolStrength >= entropyRequired ? this._REQUIRES_RESEED | this._NOT_READY : this._NOT_READY;
      }
    },
    /** Get the generator's progress toward readiness, as a fraction */
    getProgress: function(paranoia) {
      var entropyRequired = this._PARANOIA_LEVELS[paranoia ? paranoia : this._defaultParanoia];
      if (this._strength >= entropyRequired) {
        return 1;
      } else {
        return this._poolStrength > entropyRequired ? 1 : this._poolStrength / entropyRequired;
      }
    },
    /** start the built-in entropy collectors */
    startCollectors: function() {
      if (this._collectorsStarted) {
        return;
      }
      this._eventListener = {
        loadTimeCollector: this._bind(this._loadTimeCollector),
        mouseCollector: this._bind(this._mouseCollector),
        keyboardCollector: this._bind(this._keyboardCollector),
        accelerometerCollector: this._bind(this._accelerometerCollector),
        touchCollector: this._bind(this._touchCollector)
      };
      if (window.addEventListener) {
        window.addEventListener("load", this._eventListener.loadTimeCollector, false);
        window.addEventListener("mousemove", this._eventListener.mouseCollector, false);
        window.addEventListener("keypress", this._eventListener.keyboardCollector, false);
        window.addEventListener("devicemotion", this._eventListener.accelerometerCollector, false);
        window.addEventListener("touchmove", this._eventListener.touchCollector, false);
      } else if (document.attachEvent) {
        document.attachEvent("onload", this._eventListener.loadTimeCollector);
        document.attachEvent("onmousemove", this._eventListener.mouseCollector);
        document.attachEvent("keypress", this._eventListener.keyboardCollector);
      } else {
        throw new sjcl.exception.bug("can't attach event");
      }
      this._collectorsStarted = true;
    },
    /** stop the built-in entropy collectors */
    stopCollectors: function() {
      if (!this._collectorsStarted) {
        return;
      }
      if (window.removeEventListener) {
        window.removeEventListener("load", this._eventListener.loadTimeCollector, false);
        window.removeEventListener("mousemove", this._eventListener.mouseCollector, false);
        window.removeEventListener("keypress", this._eventListener.keyboardCollector, false);
        window.removeEventListener("devicemotion", this._eventListener.accelerometerCollector, false);
        window.removeEventListener("touchmove", this._eventListener.touchCollector, false);
      } else if (document.detachEvent) {
        document.detachEvent("onload", this._eventListener.loadTimeCollector);
        document.detachEvent("onmousemove", this._eventListener.mouseCollector);
        document.detachEvent("keypress", this._eventListener.keyboardCollector);
      }
      this._collectorsStarted = false;
    },
    /* use a cookie to store entropy.
    useCookie: function (all_cookies) {
        throw new sjcl.exception.bug("random: useCookie is unimplemented");
    },*/
    /** add an event listener for progress or seeded-ness. */
    addEventListener: function(name, callback) {
      this._callbacks[name][this._callbackI++] = callback;
    },
    /** remove an event listener for progress or seeded-ness */
    removeEventListener: function(name, cb) {
      var i, j, cbs = this._callbacks[name], jsTemp = [];
      for (j in cbs) {
        if (cbs.hasOwnProperty(j) && cbs[j] === cb) {
          jsTemp.push(j);
        }
      }
      for (i = 0; i < jsTemp.length; i++) {
        j = jsTemp[i];
        delete cbs[j];
      }
    },
    _bind: function(func) {
      var that = this;
      return function() {
        func.apply(that, arguments);
      };
    },
    /** Generate 4 random words, no reseed, no gate.
     * @private
     */
    _gen4words: function() {
      for (var i = 0; i < 4; i++) {
        this._counter[i] = this._counter[i] + 1 | 0;
        if (this._counter[i]) {
          break;
        }
      }
      return this._cipher.encrypt(this._counter);
    },
    /* Rekey the AES instance with itself after a request, or every _MAX_WORDS_PER_BURST words.
     * @private
     */
    _gate: function() {
      this._key = this._gen4words().concat(this._gen4words());
      this._cipher = new sjcl.cipher.aes(this._key);
    },
    /** Reseed the generator with the given words
     * @private
     */
    _reseed: function(seedWords) {
      this._key = sjcl.hash.sha256.hash(this._key.concat(seedWords));
      this._cipher = new sjcl.cipher.aes(this._key);
      for (var i = 0; i < 4; i++) {
        this._counter[i] = this._counter[i] + 1 | 0;
        if (this._counter[i]) {
          break;
        }
      }
    },
    /** reseed the data from the entropy pools
     * @param full If set, use all the entropy pools in the reseed.
     */
    _reseedFromPools: function(full) {
      var reseedData = [], strength = 0, i;
      this._nextReseed = reseedData[0] = (/* @__PURE__ */ new Date()).valueOf() + this._MILLISECONDS_PER_RESEED;
      for (i = 0; i < 16; i++) {
        reseedData.push(Math.random() * 4294967296 | 0);
      }
      for (i = 0; i < this._pools.length; i++) {
        reseedData = reseedData.concat(this._pools[i].finalize());
        strength += this._poolEntropy[i];
        this._poolEntropy[i] = 0;
        if (!full && this._reseedCount & 1 << i) {
          break;
        }
      }
      if (this._reseedCount >= 1 << this._pools.length) {
        this._pools.push(new sjcl.hash.sha256());
        this._poolEntropy.push(0);
      }
      this._poolStrength -= strength;
      if (strength > this._strength) {
        this._strength = strength;
      }
      this._reseedCount++;
      this._reseed(reseedData);
    },
    _keyboardCollector: function() {
      this._addCurrentTimeToEntropy(1);
    },
    _mouseCollector: function(ev) {
      var x, y;
      try {
        x = ev.x || ev.clientX || ev.offsetX || 0;
        y = ev.y || ev.clientY || ev.offsetY || 0;
      } catch (err) {
        x = 0;
        y = 0;
      }
      if (x != 0 && y != 0) {
        this.addEntropy([x, y], 2, "mouse");
      }
      this._addCurrentTimeToEntropy(0);
    },
    _touchCollector: function(ev) {
      var touch = ev.touches[0] || ev.changedTouches[0];
      var x = touch.pageX || touch.clientX, y = touch.pageY || touch.clientY;
      this.addEntropy([x, y], 1, "touch");
      this._addCurrentTimeToEntropy(0);
    },
    _loadTimeCollector: function() {
      this._addCurrentTimeToEntropy(2);
    },
    _addCurrentTimeToEntropy: function(estimatedEntropy) {
      if (typeof window !== "undefined" && window.performance && typeof window.performance.now === "function") {
        this.addEntropy(window.performance.now(), estimatedEntropy, "loadtime");
      } else {
        this.addEntropy((/* @__PURE__ */ new Date()).valueOf(), estimatedEntropy, "loadtime");
      }
    },
    _accelerometerCollector: function(ev) {
      var ac = ev.accelerationIncludingGravity.x || ev.accelerationIncludingGravity.y || ev.accelerationIncludingGravity.z;
      if (window.orientation) {
        var or = window.orientation;
        if (typeof or === "number") {
          this.addEntropy(or, 1, "accelerometer");
        }
      }
      if (ac) {
        this.addEntropy(ac, 2, "accelerometer");
      }
      this._addCurrentTimeToEntropy(0);
    },
    _fireEvent: function(name, arg) {
      var j, cbs = sjcl.random._callbacks[name], cbsTemp = [];
      for (j in cbs) {
        if (cbs.hasOwnProperty(j)) {
          cbsTemp.push(cbs[j]);
        }
      }
      for (j = 0; j < cbsTemp.length; j++) {
        cbsTemp[j](arg);
      }
    }
  };
  sjcl.random = new sjcl.prng(6);
  (function() {
    function getCryptoModule() {
      try {
        return __require("crypto");
      } catch (e) {
        return null;
      }
    }
    try {
      var buf, crypt, ab;
      if (typeof module !== "undefined" && module.exports && (crypt = getCryptoModule()) && crypt.randomBytes) {
        buf = crypt.randomBytes(1024 / 8);
        buf = new Uint32Array(new Uint8Array(buf).buffer);
        sjcl.random.addEntropy(buf, 1024, "crypto.randomBytes");
      } else if (typeof window !== "undefined" && typeof Uint32Array !== "undefined") {
        ab = new Uint32Array(32);
        if (window.crypto && window.crypto.getRandomValues) {
          window.crypto.getRandomValues(ab);
        } else if (window.msCrypto && window.msCrypto.getRandomValues) {
          window.msCrypto.getRandomValues(ab);
        } else {
          return;
        }
        sjcl.random.addEntropy(ab, 1024, "crypto.getRandomValues");
      } else {
      }
    } catch (e) {
      if (typeof window !== "undefined" && window.console) {
        console.log("There was an error collecting entropy from the browser:");
        console.log(e);
      }
    }
  })();
  sjcl.json = {
    /** Default values for encryption */
    defaults: { v: 1, iter: 1e4, ks: 128, ts: 64, mode: "ccm", adata: "", cipher: "aes" },
    /** Simple encryption function.
     * @param {String|bitArray} password The password or key.
     * @param {String} plaintext The data to encrypt.
     * @param {Object} [params] The parameters including tag, iv and salt.
     * @param {Object} [rp] A returned version with filled-in parameters.
     * @return {Object} The cipher raw data.
     * @throws {sjcl.exception.invalid} if a parameter is invalid.
     */
    _encrypt: function(password, plaintext, params, rp) {
      params = params || {};
      rp = rp || {};
      var j = sjcl.json, p = j._add({ iv: sjcl.random.randomWords(4, 0) }, j.defaults), tmp, prp, adata;
      j._add(p, params);
      adata = p.adata;
      if (typeof p.salt === "string") {
        p.salt = sjcl.codec.base64.toBits(p.salt);
      }
      if (typeof p.iv === "string") {
        p.iv = sjcl.codec.base64.toBits(p.iv);
      }
      if (!sjcl.mode[p.mode] || !sjcl.cipher[p.cipher] || typeof password === "string" && p.iter <= 100 || p.ts !== 64 && p.ts !== 96 && p.ts !== 128 || p.ks !== 128 && p.ks !== 192 && p.ks !== 256 || (p.iv.length < 2 || p.iv.length > 4)) {
        throw new sjcl.exception.invalid("json encrypt: invalid parameters");
      }
      if (typeof password === "string") {
        tmp = sjcl.misc.cachedPbkdf2(password, p);
        password = tmp.key.slice(0, p.ks / 32);
        p.salt = tmp.salt;
      } else if (sjcl.ecc && password instanceof sjcl.ecc.elGamal.publicKey) {
        tmp = password.kem();
        p.kemtag = tmp.tag;
        password = tmp.key.slice(0, p.ks / 32);
      }
      if (typeof plaintext === "string") {
        plaintext = sjcl.codec.utf8String.toBits(plaintext);
      }
      if (typeof adata === "string") {
        p.adata = adata = sjcl.codec.utf8String.toBits(adata);
      }
      prp = new sjcl.cipher[p.cipher](password);
      j._add(rp, p);
      rp.key = password;
      if (p.mode === "ccm" && sjcl.arrayBuffer && sjcl.arrayBuffer.ccm && plaintext instanceof ArrayBuffer) {
        p.ct = sjcl.arrayBuffer.ccm.encrypt(prp, plaintext, p.iv, adata, p.ts);
      } else {
        p.ct = sjcl.mode[p.mode].encrypt(prp, plaintext, p.iv, adata, p.ts);
      }
      return p;
    },
    /** Simple encryption function.
     * @param {String|bitArray} password The password or key.
     * @param {String} plaintext The data to encrypt.
     * @param {Object} [params] The parameters including tag, iv and salt.
     * @param {Object} [rp] A returned version with filled-in parameters.
     * @return {String} The ciphertext serialized data.
     * @throws {sjcl.exception.invalid} if a parameter is invalid.
     */
    encrypt: function(password, plaintext, params, rp) {
      var j = sjcl.json, p = j._encrypt.apply(j, arguments);
      return j.encode(p);
    },
    /** Simple decryption function.
     * @param {String|bitArray} password The password or key.
     * @param {Object} ciphertext The cipher raw data to decrypt.
     * @param {Object} [params] Additional non-default parameters.
     * @param {Object} [rp] A returned object with filled parameters.
     * @return {String} The plaintext.
     * @throws {sjcl.exception.invalid} if a parameter is invalid.
     * @throws {sjcl.exception.corrupt} if the ciphertext is corrupt.
     */
    _decrypt: function(password, ciphertext, params, rp) {
      params = params || {};
      rp = rp || {};
      var j = sjcl.json, p = j._add(j._add(j._add({}, j.defaults), ciphertext), params, true), ct, tmp, prp, adata = p.adata;
      if (typeof p.salt === "string") {
        p.salt = sjcl.codec.base64.toBits(p.salt);
      }
      if (typeof p.iv === "string") {
        p.iv = sjcl.codec.base64.toBits(p.iv);
      }
      if (!sjcl.mode[p.mode] || !sjcl.cipher[p.cipher] || typeof password === "string" && p.iter <= 100 || p.ts !== 64 && p.ts !== 96 && p.ts !== 128 || p.ks !== 128 && p.ks !== 192 && p.ks !== 256 || !p.iv || (p.iv.length < 2 || p.iv.length > 4)) {
        throw new sjcl.exception.invalid("json decrypt: invalid parameters");
      }
      if (typeof password === "string") {
        tmp = sjcl.misc.cachedPbkdf2(password, p);
        password = tmp.key.slice(0, p.ks / 32);
        p.salt = tmp.salt;
      } else if (sjcl.ecc && password instanceof sjcl.ecc.elGamal.secretKey) {
        password = password.unkem(sjcl.codec.base64.toBits(p.kemtag)).slice(0, p.ks / 32);
      }
      if (typeof adata === "string") {
        adata = sjcl.codec.utf8String.toBits(adata);
      }
      prp = new sjcl.cipher[p.cipher](password);
      if (p.mode === "ccm" && sjcl.arrayBuffer && sjcl.arrayBuffer.ccm && p.ct instanceof ArrayBuffer) {
        ct = sjcl.arrayBuffer.ccm.decrypt(prp, p.ct, p.iv, p.tag, adata, p.ts);
      } else {
        ct = sjcl.mode[p.mode].decrypt(prp, p.ct, p.iv, adata, p.ts);
      }
      j._add(rp, p);
      rp.key = password;
      if (params.raw === 1) {
        return ct;
      } else {
        return sjcl.codec.utf8String.fromBits(ct);
      }
    },
    /** Simple decryption function.
     * @param {String|bitArray} password The password or key.
     * @param {String} ciphertext The ciphertext to decrypt.
     * @param {Object} [params] Additional non-default parameters.
     * @param {Object} [rp] A returned object with filled parameters.
     * @return {String} The plaintext.
     * @throws {sjcl.exception.invalid} if a parameter is invalid.
     * @throws {sjcl.exception.corrupt} if the ciphertext is corrupt.
     */
    decrypt: function(password, ciphertext, params, rp) {
      var j = sjcl.json;
      return j._decrypt(password, j.decode(ciphertext), params, rp);
    },
    /** Encode a flat structure into a JSON string.
     * @param {Object} obj The structure to encode.
     * @return {String} A JSON string.
     * @throws {sjcl.exception.invalid} if obj has a non-alphanumeric property.
     * @throws {sjcl.exception.bug} if a parameter has an unsupported type.
     */
    encode: function(obj) {
      var i, out = "{", comma = "";
      for (i in obj) {
        if (obj.hasOwnProperty(i)) {
          if (!i.match(/^[a-z0-9]+$/i)) {
            throw new sjcl.exception.invalid("json encode: invalid property name");
          }
          out += comma + '"' + i + '":';
          comma = ",";
          switch (typeof obj[i]) {
            case "number":
            case "boolean":
              out += obj[i];
              break;
            case "string":
              out += '"' + escape(obj[i]) + '"';
              break;
            case "object":
              out += '"' + sjcl.codec.base64.fromBits(obj[i], 0) + '"';
              break;
            default:
              throw new sjcl.exception.bug("json encode: unsupported type");
          }
        }
      }
      return out + "}";
    },
    /** Decode a simple (flat) JSON string into a structure.  The ciphertext,
     * adata, salt and iv will be base64-decoded.
     * @param {String} str The string.
     * @return {Object} The decoded structure.
     * @throws {sjcl.exception.invalid} if str isn't (simple) JSON.
     */
    decode: function(str) {
      str = str.replace(/\s/g, "");
      if (!str.match(/^\{.*\}$/)) {
        throw new sjcl.exception.invalid("json decode: this isn't json!");
      }
      var a = str.replace(/^\{|\}$/g, "").split(/,/), out = {}, i, m;
      for (i = 0; i < a.length; i++) {
        if (!(m = a[i].match(/^\s*(?:(["']?)([a-z][a-z0-9]*)\1)\s*:\s*(?:(-?\d+)|"([a-z0-9+\/%*_.@=\-]*)"|(true|false))$/i))) {
          throw new sjcl.exception.invalid("json decode: this isn't json!");
        }
        if (m[3] != null) {
          out[m[2]] = parseInt(m[3], 10);
        } else if (m[4] != null) {
          out[m[2]] = m[2].match(/^(ct|adata|salt|iv)$/) ? sjcl.codec.base64.toBits(m[4]) : unescape(m[4]);
        } else if (m[5] != null) {
          out[m[2]] = m[5] === "true";
        }
      }
      return out;
    },
    /** Insert all elements of src into target, modifying and returning target.
     * @param {Object} target The object to be modified.
     * @param {Object} src The object to pull data from.
     * @param {boolean} [requireSame=false] If true, throw an exception if any field of target differs from corresponding field of src.
     * @return {Object} target.
     * @private
     */
    _add: function(target, src, requireSame) {
      if (target === void 0) {
        target = {};
      }
      if (src === void 0) {
        return target;
      }
      var i;
      for (i in src) {
        if (src.hasOwnProperty(i)) {
          if (requireSame && target[i] !== void 0 && target[i] !== src[i]) {
            throw new sjcl.exception.invalid("required parameter overridden");
          }
          target[i] = src[i];
        }
      }
      return target;
    },
    /** Remove all elements of minus from plus.  Does not modify plus.
     * @private
     */
    _subtract: function(plus, minus) {
      var out = {}, i;
      for (i in plus) {
        if (plus.hasOwnProperty(i) && plus[i] !== minus[i]) {
          out[i] = plus[i];
        }
      }
      return out;
    },
    /** Return only the specified elements of src.
     * @private
     */
    _filter: function(src, filter) {
      var out = {}, i;
      for (i = 0; i < filter.length; i++) {
        if (src[filter[i]] !== void 0) {
          out[filter[i]] = src[filter[i]];
        }
      }
      return out;
    }
  };
  sjcl.encrypt = sjcl.json.encrypt;
  sjcl.decrypt = sjcl.json.decrypt;
  sjcl.misc._pbkdf2Cache = {};
  sjcl.misc.cachedPbkdf2 = function(password, obj) {
    var cache = sjcl.misc._pbkdf2Cache, c, cp, str, salt, iter;
    obj = obj || {};
    iter = obj.iter || 1e3;
    cp = cache[password] = cache[password] || {};
    c = cp[iter] = cp[iter] || { firstSalt: obj.salt && obj.salt.length ? obj.salt.slice(0) : sjcl.random.randomWords(2, 0) };
    salt = obj.salt === void 0 ? c.firstSalt : obj.salt;
    c[salt] = c[salt] || sjcl.misc.pbkdf2(password, salt, obj.iter);
    return { key: c[salt].slice(0), salt: salt.slice(0) };
  };
  sjcl.bn = function(it) {
    this.initWith(it);
  };
  sjcl.bn.prototype = {
    radix: 24,
    maxMul: 8,
    _class: sjcl.bn,
    copy: function() {
      return new this._class(this);
    },
    /**
     * Initializes this with it, either as a bn, a number, or a hex string.
     */
    initWith: function(it) {
      var i = 0, k;
      switch (typeof it) {
        case "object":
          this.limbs = it.limbs.slice(0);
          break;
        case "number":
          this.limbs = [it];
          this.normalize();
          break;
        case "string":
          it = it.replace(/^0x/, "");
          this.limbs = [];
          k = this.radix / 4;
          for (i = 0; i < it.length; i += k) {
            this.limbs.push(parseInt(it.substring(Math.max(it.length - i - k, 0), it.length - i), 16));
          }
          break;
        default:
          this.limbs = [0];
      }
      return this;
    },
    /**
     * Returns true if "this" and "that" are equal.  Calls fullReduce().
     * Equality test is in constant time.
     */
    equals: function(that) {
      if (typeof that === "number") {
        that = new this._class(that);
      }
      var difference = 0, i;
      this.fullReduce();
      that.fullReduce();
      for (i = 0; i < this.limbs.length || i < that.limbs.length; i++) {
        difference |= this.getLimb(i) ^ that.getLimb(i);
      }
      return difference === 0;
    },
    /**
     * Get the i'th limb of this, zero if i is too large.
     */
    getLimb: function(i) {
      return i >= this.limbs.length ? 0 : this.limbs[i];
    },
    /**
     * Constant time comparison function.
     * Returns 1 if this >= that, or zero otherwise.
     */
    greaterEquals: function(that) {
      if (typeof that === "number") {
        that = new this._class(that);
      }
      var less = 0, greater = 0, i, a, b;
      i = Math.max(this.limbs.length, that.limbs.length) - 1;
      for (; i >= 0; i--) {
        a = this.getLimb(i);
        b = that.getLimb(i);
        greater |= b - a & ~less;
        less |= a - b & ~greater;
      }
      return (greater | ~less) >>> 31;
    },
    /**
     * Convert to a hex string.
     */
    toString: function() {
      this.fullReduce();
      var out = "", i, s, l = this.limbs;
      for (i = 0; i < this.limbs.length; i++) {
        s = l[i].toString(16);
        while (i < this.limbs.length - 1 && s.length < 6) {
          s = "0" + s;
        }
        out = s + out;
      }
      return "0x" + out;
    },
    /** this += that.  Does not normalize. */
    addM: function(that) {
      if (typeof that !== "object") {
        that = new this._class(that);
      }
      var i, l = this.limbs, ll = that.limbs;
      for (i = l.length; i < ll.length; i++) {
        l[i] = 0;
      }
      for (i = 0; i < ll.length; i++) {
        l[i] += ll[i];
      }
      return this;
    },
    /** this *= 2.  Requires normalized; ends up normalized. */
    doubleM: function() {
      var i, carry = 0, tmp, r = this.radix, m = this.radixMask, l = this.limbs;
      for (i = 0; i < l.length; i++) {
        tmp = l[i];
        tmp = tmp + tmp + carry;
        l[i] = tmp & m;
        carry = tmp >> r;
      }
      if (carry) {
        l.push(carry);
      }
      return this;
    },
    /** this /= 2, rounded down.  Requires normalized; ends up normalized. */
    halveM: function() {
      var i, carry = 0, tmp, r = this.radix, l = this.limbs;
      for (i = l.length - 1; i >= 0; i--) {
        tmp = l[i];
        l[i] = tmp + carry >> 1;
        carry = (tmp & 1) << r;
      }
      if (!l[l.length - 1]) {
        l.pop();
      }
      return this;
    },
    /** this -= that.  Does not normalize. */
    subM: function(that) {
      if (typeof that !== "object") {
        that = new this._class(that);
      }
      var i, l = this.limbs, ll = that.limbs;
      for (i = l.length; i < ll.length; i++) {
        l[i] = 0;
      }
      for (i = 0; i < ll.length; i++) {
        l[i] -= ll[i];
      }
      return this;
    },
    mod: function(that) {
      var neg = !this.greaterEquals(new sjcl.bn(0));
      that = new sjcl.bn(that).normalize();
      var out = new sjcl.bn(this).normalize(), ci = 0;
      if (neg)
        out = new sjcl.bn(0).subM(out).normalize();
      for (; out.greaterEquals(that); ci++) {
        that.doubleM();
      }
      if (neg)
        out = that.sub(out).normalize();
      for (; ci > 0; ci--) {
        that.halveM();
        if (out.greaterEquals(that)) {
          out.subM(that).normalize();
        }
      }
      return out.trim();
    },
    /** return inverse mod prime p.  p must be odd. Binary extended Euclidean algorithm mod p. */
    inverseMod: function(p) {
      var a = new sjcl.bn(1), b = new sjcl.bn(0), x = new sjcl.bn(this), y = new sjcl.bn(p), tmp, i, nz = 1;
      if (!(p.limbs[0] & 1)) {
        throw new sjcl.exception.invalid("inverseMod: p must be odd");
      }
      do {
        if (x.limbs[0] & 1) {
          if (!x.greaterEquals(y)) {
            tmp = x;
            x = y;
            y = tmp;
            tmp = a;
            a = b;
            b = tmp;
          }
          x.subM(y);
          x.normalize();
          if (!a.greaterEquals(b)) {
            a.addM(p);
          }
          a.subM(b);
        }
        x.halveM();
        if (a.limbs[0] & 1) {
          a.addM(p);
        }
        a.normalize();
        a.halveM();
        for (i = nz = 0; i < x.limbs.length; i++) {
          nz |= x.limbs[i];
        }
      } while (nz);
      if (!y.equals(1)) {
        throw new sjcl.exception.invalid("inverseMod: p and x must be relatively prime");
      }
      return b;
    },
    /** this + that.  Does not normalize. */
    add: function(that) {
      return this.copy().addM(that);
    },
    /** this - that.  Does not normalize. */
    sub: function(that) {
      return this.copy().subM(that);
    },
    /** this * that.  Normalizes and reduces. */
    mul: function(that) {
      if (typeof that === "number") {
        that = new this._class(that);
      } else {
        that.normalize();
      }
      this.normalize();
      var i, j, a = this.limbs, b = that.limbs, al = a.length, bl = b.length, out = new this._class(), c = out.limbs, ai, ii = this.maxMul;
      for (i = 0; i < this.limbs.length + that.limbs.length + 1; i++) {
        c[i] = 0;
      }
      for (i = 0; i < al; i++) {
        ai = a[i];
        for (j = 0; j < bl; j++) {
          c[i + j] += ai * b[j];
        }
        if (!--ii) {
          ii = this.maxMul;
          out.cnormalize();
        }
      }
      return out.cnormalize().reduce();
    },
    /** this ^ 2.  Normalizes and reduces. */
    square: function() {
      return this.mul(this);
    },
    /** this ^ n.  Uses square-and-multiply.  Normalizes and reduces. */
    power: function(l) {
      l = new sjcl.bn(l).normalize().trim().limbs;
      var i, j, out = new this._class(1), pow = this;
      for (i = 0; i < l.length; i++) {
        for (j = 0; j < this.radix; j++) {
          if (l[i] & 1 << j) {
            out = out.mul(pow);
          }
          if (i == l.length - 1 && l[i] >> j + 1 == 0) {
            break;
          }
          pow = pow.square();
        }
      }
      return out;
    },
    /** this * that mod N */
    mulmod: function(that, N) {
      return this.mod(N).mul(that.mod(N)).mod(N);
    },
    /** this ^ x mod N */
    powermod: function(x, N) {
      x = new sjcl.bn(x);
      N = new sjcl.bn(N);
      if ((N.limbs[0] & 1) == 1) {
        var montOut = this.montpowermod(x, N);
        if (montOut != false) {
          return montOut;
        }
      }
      var i, j, l = x.normalize().trim().limbs, out = new this._class(1), pow = this;
      for (i = 0; i < l.length; i++) {
        for (j = 0; j < this.radix; j++) {
          if (l[i] & 1 << j) {
            out = out.mulmod(pow, N);
          }
          if (i == l.length - 1 && l[i] >> j + 1 == 0) {
            break;
          }
          pow = pow.mulmod(pow, N);
        }
      }
      return out;
    },
    /** this ^ x mod N with Montomery reduction */
    montpowermod: function(x, N) {
      x = new sjcl.bn(x).normalize().trim();
      N = new sjcl.bn(N);
      var i, j, radix = this.radix, out = new this._class(1), pow = this.copy();
      var R, s, wind, bitsize = x.bitLength();
      R = new sjcl.bn({
        limbs: N.copy().normalize().trim().limbs.map(function() {
          return 0;
        })
      });
      for (s = this.radix; s > 0; s--) {
        if ((N.limbs[N.limbs.length - 1] >> s & 1) == 1) {
          R.limbs[R.limbs.length - 1] = 1 << s;
          break;
        }
      }
      if (bitsize == 0) {
        return this;
      } else if (bitsize < 18) {
        wind = 1;
      } else if (bitsize < 48) {
        wind = 3;
      } else if (bitsize < 144) {
        wind = 4;
      } else if (bitsize < 768) {
        wind = 5;
      } else {
        wind = 6;
      }
      var RR = R.copy(), NN = N.copy(), RP = new sjcl.bn(1), NP = new sjcl.bn(0), RT = R.copy();
      while (RT.greaterEquals(1)) {
        RT.halveM();
        if ((RP.limbs[0] & 1) == 0) {
          RP.halveM();
          NP.halveM();
        } else {
          RP.addM(NN);
          RP.halveM();
          NP.halveM();
          NP.addM(RR);
        }
      }
      RP = RP.normalize();
      NP = NP.normalize();
      RR.doubleM();
      var R2 = RR.mulmod(RR, N);
      if (!RR.mul(RP).sub(N.mul(NP)).equals(1)) {
        return false;
      }
      var montIn = function(c) {
        return montMul(c, R2);
      }, montMul = function(a, b) {
        var k, ab, right, abBar, mask = (1 << s + 1) - 1;
        ab = a.mul(b);
        right = ab.mul(NP);
        right.limbs = right.limbs.slice(0, R.limbs.length);
        if (right.limbs.length == R.limbs.length) {
          right.limbs[R.limbs.length - 1] &= mask;
        }
        right = right.mul(N);
        abBar = ab.add(right).normalize().trim();
        abBar.limbs = abBar.limbs.slice(R.limbs.length - 1);
        for (k = 0; k < abBar.limbs.length; k++) {
          if (k > 0) {
            abBar.limbs[k - 1] |= (abBar.limbs[k] & mask) << radix - s - 1;
          }
          abBar.limbs[k] = abBar.limbs[k] >> s + 1;
        }
        if (abBar.greaterEquals(N)) {
          abBar.subM(N);
        }
        return abBar;
      }, montOut = function(c) {
        return montMul(c, 1);
      };
      pow = montIn(pow);
      out = montIn(out);
      var h, precomp = {}, cap = (1 << wind - 1) - 1;
      precomp[1] = pow.copy();
      precomp[2] = montMul(pow, pow);
      for (h = 1; h <= cap; h++) {
        precomp[2 * h + 1] = montMul(precomp[2 * h - 1], precomp[2]);
      }
      var getBit = function(exp, i2) {
        var off = i2 % exp.radix;
        return (exp.limbs[Math.floor(i2 / exp.radix)] & 1 << off) >> off;
      };
      for (i = x.bitLength() - 1; i >= 0; ) {
        if (getBit(x, i) == 0) {
          out = montMul(out, out);
          i = i - 1;
        } else {
          var l = i - wind + 1;
          while (getBit(x, l) == 0) {
            l++;
          }
          var indx = 0;
          for (j = l; j <= i; j++) {
            indx += getBit(x, j) << j - l;
            out = montMul(out, out);
          }
          out = montMul(out, precomp[indx]);
          i = l - 1;
        }
      }
      return montOut(out);
    },
    trim: function() {
      var l = this.limbs, p;
      do {
        p = l.pop();
      } while (l.length && p === 0);
      l.push(p);
      return this;
    },
    /** Reduce mod a modulus.  Stubbed for subclassing. */
    reduce: function() {
      return this;
    },
    /** Reduce and normalize. */
    fullReduce: function() {
      return this.normalize();
    },
    /** Propagate carries. */
    normalize: function() {
      var carry = 0, i, pv = this.placeVal, ipv = this.ipv, l, m, limbs = this.limbs, ll = limbs.length, mask = this.radixMask;
      for (i = 0; i < ll || carry !== 0 && carry !== -1; i++) {
        l = (limbs[i] || 0) + carry;
        m = limbs[i] = l & mask;
        carry = (l - m) * ipv;
      }
      if (carry === -1) {
        limbs[i - 1] -= pv;
      }
      this.trim();
      return this;
    },
    /** Constant-time normalize. Does not allocate additional space. */
    cnormalize: function() {
      var carry = 0, i, ipv = this.ipv, l, m, limbs = this.limbs, ll = limbs.length, mask = this.radixMask;
      for (i = 0; i < ll - 1; i++) {
        l = limbs[i] + carry;
        m = limbs[i] = l & mask;
        carry = (l - m) * ipv;
      }
      limbs[i] += carry;
      return this;
    },
    /** Serialize to a bit array */
    toBits: function(len) {
      this.fullReduce();
      len = len || this.exponent || this.bitLength();
      var i = Math.floor((len - 1) / 24), w = sjcl.bitArray, e = (len + 7 & -8) % this.radix || this.radix, out = [w.partial(e, this.getLimb(i))];
      for (i--; i >= 0; i--) {
        out = w.concat(out, [w.partial(Math.min(this.radix, len), this.getLimb(i))]);
        len -= this.radix;
      }
      return out;
    },
    /** Return the length in bits, rounded up to the nearest byte. */
    bitLength: function() {
      this.fullReduce();
      var out = this.radix * (this.limbs.length - 1), b = this.limbs[this.limbs.length - 1];
      for (; b; b >>>= 1) {
        out++;
      }
      return out + 7 & -8;
    }
  };
  sjcl.bn.fromBits = function(bits) {
    var Class = this, out = new Class(), words = [], w = sjcl.bitArray, t = this.prototype, l = Math.min(this.bitLength || 4294967296, w.bitLength(bits)), e = l % t.radix || t.radix;
    words[0] = w.extract(bits, 0, e);
    for (; e < l; e += t.radix) {
      words.unshift(w.extract(bits, e, t.radix));
    }
    out.limbs = words;
    return out;
  };
  sjcl.bn.prototype.ipv = 1 / (sjcl.bn.prototype.placeVal = Math.pow(2, sjcl.bn.prototype.radix));
  sjcl.bn.prototype.radixMask = (1 << sjcl.bn.prototype.radix) - 1;
  sjcl.bn.pseudoMersennePrime = function(exponent, coeff) {
    function p(it) {
      this.initWith(it);
    }
    var ppr = p.prototype = new sjcl.bn(), i, tmp, mo;
    mo = ppr.modOffset = Math.ceil(tmp = exponent / ppr.radix);
    ppr.exponent = exponent;
    ppr.offset = [];
    ppr.factor = [];
    ppr.minOffset = mo;
    ppr.fullMask = 0;
    ppr.fullOffset = [];
    ppr.fullFactor = [];
    ppr.modulus = p.modulus = new sjcl.bn(Math.pow(2, exponent));
    ppr.fullMask = 0 | -Math.pow(2, exponent % ppr.radix);
    for (i = 0; i < coeff.length; i++) {
      ppr.offset[i] = Math.floor(coeff[i][0] / ppr.radix - tmp);
      ppr.fullOffset[i] = Math.floor(coeff[i][0] / ppr.radix) - mo + 1;
      ppr.factor[i] = coeff[i][1] * Math.pow(1 / 2, exponent - coeff[i][0] + ppr.offset[i] * ppr.radix);
      ppr.fullFactor[i] = coeff[i][1] * Math.pow(1 / 2, exponent - coeff[i][0] + ppr.fullOffset[i] * ppr.radix);
      ppr.modulus.addM(new sjcl.bn(Math.pow(2, coeff[i][0]) * coeff[i][1]));
      ppr.minOffset = Math.min(ppr.minOffset, -ppr.offset[i]);
    }
    ppr._class = p;
    ppr.modulus.cnormalize();
    ppr.reduce = function() {
      var i2, k, l, mo2 = this.modOffset, limbs = this.limbs, off = this.offset, ol = this.offset.length, fac = this.factor, ll;
      i2 = this.minOffset;
      while (limbs.length > mo2) {
        l = limbs.pop();
        ll = limbs.length;
        for (k = 0; k < ol; k++) {
          limbs[ll + off[k]] -= fac[k] * l;
        }
        i2--;
        if (!i2) {
          limbs.push(0);
          this.cnormalize();
          i2 = this.minOffset;
        }
      }
      this.cnormalize();
      return this;
    };
    ppr._strongReduce = ppr.fullMask === -1 ? ppr.reduce : function() {
      var limbs = this.limbs, i2 = limbs.length - 1, k, l;
      this.reduce();
      if (i2 === this.modOffset - 1) {
        l = limbs[i2] & this.fullMask;
        limbs[i2] -= l;
        for (k = 0; k < this.fullOffset.length; k++) {
          limbs[i2 + this.fullOffset[k]] -= this.fullFactor[k] * l;
        }
        this.normalize();
      }
    };
    ppr.fullReduce = function() {
      var greater, i2;
      this._strongReduce();
      this.addM(this.modulus);
      this.addM(this.modulus);
      this.normalize();
      this._strongReduce();
      for (i2 = this.limbs.length; i2 < this.modOffset; i2++) {
        this.limbs[i2] = 0;
      }
      greater = this.greaterEquals(this.modulus);
      for (i2 = 0; i2 < this.limbs.length; i2++) {
        this.limbs[i2] -= this.modulus.limbs[i2] * greater;
      }
      this.cnormalize();
      return this;
    };
    ppr.inverse = function() {
      return this.power(this.modulus.sub(2));
    };
    p.fromBits = sjcl.bn.fromBits;
    return p;
  };
  var sbp = sjcl.bn.pseudoMersennePrime;
  sjcl.bn.prime = {
    p127: sbp(127, [[0, -1]]),
    // Bernstein's prime for Curve25519
    p25519: sbp(255, [[0, -19]]),
    // Koblitz primes
    p192k: sbp(192, [[32, -1], [12, -1], [8, -1], [7, -1], [6, -1], [3, -1], [0, -1]]),
    p224k: sbp(224, [[32, -1], [12, -1], [11, -1], [9, -1], [7, -1], [4, -1], [1, -1], [0, -1]]),
    p256k: sbp(256, [[32, -1], [9, -1], [8, -1], [7, -1], [6, -1], [4, -1], [0, -1]]),
    // NIST primes
    p192: sbp(192, [[0, -1], [64, -1]]),
    p224: sbp(224, [[0, 1], [96, -1]]),
    p256: sbp(256, [[0, -1], [96, 1], [192, 1], [224, -1]]),
    p384: sbp(384, [[0, -1], [32, 1], [96, -1], [128, -1]]),
    p521: sbp(521, [[0, -1]])
  };
  sjcl.bn.random = function(modulus, paranoia) {
    if (typeof modulus !== "object") {
      modulus = new sjcl.bn(modulus);
    }
    var words, i, l = modulus.limbs.length, m = modulus.limbs[l - 1] + 1, out = new sjcl.bn();
    while (true) {
      do {
        words = sjcl.random.randomWords(l, paranoia);
        if (words[l - 1] < 0) {
          words[l - 1] += 4294967296;
        }
      } while (Math.floor(words[l - 1] / m) === Math.floor(4294967296 / m));
      words[l - 1] %= m;
      for (i = 0; i < l - 1; i++) {
        words[i] &= modulus.radixMask;
      }
      out.limbs = words;
      if (!out.greaterEquals(modulus)) {
        return out;
      }
    }
  };
  if (typeof ArrayBuffer === "undefined") {
    (function(globals) {
      "use strict";
      globals.ArrayBuffer = function() {
      };
      globals.DataView = function() {
      };
    })(void 0);
  }
  sjcl.codec.arrayBuffer = {
    /** Convert from a bitArray to an ArrayBuffer.
     * Will default to 8byte padding if padding is undefined*/
    fromBits: function(arr, padding, padding_count) {
      var out, i, ol, tmp, smallest;
      padding = padding == void 0 ? true : padding;
      padding_count = padding_count || 8;
      if (arr.length === 0) {
        return new ArrayBuffer(0);
      }
      ol = sjcl.bitArray.bitLength(arr) / 8;
      if (sjcl.bitArray.bitLength(arr) % 8 !== 0) {
        throw new sjcl.exception.invalid("Invalid bit size, must be divisble by 8 to fit in an arraybuffer correctly");
      }
      if (padding && ol % padding_count !== 0) {
        ol += padding_count - ol % padding_count;
      }
      tmp = new DataView(new ArrayBuffer(arr.length * 4));
      for (i = 0; i < arr.length; i++) {
        tmp.setUint32(i * 4, arr[i] << 32);
      }
      out = new DataView(new ArrayBuffer(ol));
      if (out.byteLength === tmp.byteLength) {
        return tmp.buffer;
      }
      smallest = tmp.byteLength < out.byteLength ? tmp.byteLength : out.byteLength;
      for (i = 0; i < smallest; i++) {
        out.setUint8(i, tmp.getUint8(i));
      }
      return out.buffer;
    },
    /** Convert from an ArrayBuffer to a bitArray. */
    toBits: function(buffer) {
      var i, out = [], len, inView, tmp;
      if (buffer.byteLength === 0) {
        return [];
      }
      inView = new DataView(buffer);
      len = inView.byteLength - inView.byteLength % 4;
      for (var i = 0; i < len; i += 4) {
        out.push(inView.getUint32(i));
      }
      if (inView.byteLength % 4 != 0) {
        tmp = new DataView(new ArrayBuffer(4));
        for (var i = 0, l = inView.byteLength % 4; i < l; i++) {
          tmp.setUint8(i + 4 - l, inView.getUint8(len + i));
        }
        out.push(sjcl.bitArray.partial(inView.byteLength % 4 * 8, tmp.getUint32(0)));
      }
      return out;
    },
    /** Prints a hex output of the buffer contents, akin to hexdump **/
    hexDumpBuffer: function(buffer) {
      var stringBufferView = new DataView(buffer);
      var string = "";
      var pad = function(n, width) {
        n = n + "";
        return n.length >= width ? n : new Array(width - n.length + 1).join("0") + n;
      };
      for (var i = 0; i < stringBufferView.byteLength; i += 2) {
        if (i % 16 == 0)
          string += "\n" + i.toString(16) + "	";
        string += pad(stringBufferView.getUint16(i).toString(16), 4) + " ";
      }
      if (typeof console === void 0) {
        console = console || { log: function() {
        } };
      }
      console.log(string.toUpperCase());
    }
  };
  if (typeof module !== "undefined" && module.exports) {
    module = { exports: sjcl };
  }
  if (typeof define === "function") {
    define([], function() {
      return sjcl;
    });
  }
  var sjcl_default = sjcl;

  // node_modules/@cloudflare/blindrsa-ts/lib/src/util.js
  function assertNever(name, x) {
    throw new Error(`unexpected ${name} identifier: ${x}`);
  }
  function getHashParams(hash) {
    switch (hash) {
      case "SHA-1":
        return { name: hash, hLen: 20 };
      case "SHA-256":
        return { name: hash, hLen: 32 };
      case "SHA-384":
        return { name: hash, hLen: 48 };
      case "SHA-512":
        return { name: hash, hLen: 64 };
      default:
        assertNever("Hash", hash);
    }
  }
  function os2ip(bytes) {
    return sjcl_default.bn.fromBits(sjcl_default.codec.bytes.toBits(Array.from(bytes)));
  }
  function i2osp(num, byteLength) {
    if (Math.ceil(num.bitLength() / 8) > byteLength) {
      throw new Error(`number does not fit in ${byteLength} bytes`);
    }
    const bytes = new Uint8Array(byteLength);
    const unpadded = new Uint8Array(sjcl_default.codec.bytes.fromBits(num.toBits(void 0)));
    bytes.set(unpadded, byteLength - unpadded.length);
    return bytes;
  }
  function joinAll(a) {
    let size = 0;
    for (const ai of a) {
      size += ai.length;
    }
    const ret = new Uint8Array(new ArrayBuffer(size));
    let offset = 0;
    for (const ai of a) {
      ret.set(ai, offset);
      offset += ai.length;
    }
    return ret;
  }
  function xor(a, b) {
    if (a.length !== b.length || a.length === 0) {
      throw new Error(`arrays of different length: ${a.length} - ${b.length}`);
    }
    const ai = a[Symbol.iterator]();
    const bi = b[Symbol.iterator]();
    return new Uint8Array(a.length).map(() => ai.next().value ^ bi.next().value);
  }
  function incCounter(c) {
    c[3]++;
    if (c[3] != 0) {
      return;
    }
    c[2]++;
    if (c[2] != 0) {
      return;
    }
    c[1]++;
    if (c[1] != 0) {
      return;
    }
    c[0]++;
    return;
  }
  async function mgf1(h, seed, mLen) {
    const n = Math.ceil(mLen / h.hLen);
    if (n > Math.pow(2, 32)) {
      throw new Error("mask too long");
    }
    let T = new Uint8Array();
    const counter = new Uint8Array(4);
    for (let i = 0; i < n; i++) {
      const hash = new Uint8Array(await crypto.subtle.digest(h.name, joinAll([seed, counter])));
      T = joinAll([T, hash]);
      incCounter(counter);
    }
    return T.subarray(0, mLen);
  }
  async function emsa_pss_encode(msg, emBits, opts, mgf = mgf1) {
    const { hash, sLen } = opts;
    const hashParams = getHashParams(hash);
    const { hLen } = hashParams;
    const emLen = Math.ceil(emBits / 8);
    const mHash = new Uint8Array(await crypto.subtle.digest(hash, msg));
    if (emLen < hLen + sLen + 2) {
      throw new Error("encoding error");
    }
    const salt = crypto.getRandomValues(new Uint8Array(sLen));
    const mPrime = joinAll([new Uint8Array(8), mHash, salt]);
    const h = new Uint8Array(await crypto.subtle.digest(hash, mPrime));
    const ps = new Uint8Array(emLen - sLen - hLen - 2);
    const db = joinAll([ps, Uint8Array.of(1), salt]);
    const dbMask = await mgf(hashParams, h, emLen - hLen - 1);
    const maskedDB = xor(db, dbMask);
    maskedDB[0] &= 255 >> 8 * emLen - emBits;
    const em = joinAll([maskedDB, h, Uint8Array.of(188)]);
    return em;
  }
  function rsavp1(pkS, s) {
    if (!s.greaterEquals(new sjcl_default.bn(0)) || s.greaterEquals(pkS.n)) {
      throw new Error("signature representative out of range");
    }
    const m = s.powermod(pkS.e, pkS.n);
    return m;
  }
  function rsasp1(skS, m) {
    if (!m.greaterEquals(new sjcl_default.bn(0)) || m.greaterEquals(skS.n)) {
      throw new Error("signature representative out of range");
    }
    const s = m.powermod(skS.d, skS.n);
    return s;
  }
  function is_coprime(x, n) {
    try {
      x.inverseMod(n);
    } catch {
      return false;
    }
    return true;
  }
  function random_integer_uniform(n, kLen) {
    const MAX_NUM_TRIES = 128;
    for (let i = 0; i < MAX_NUM_TRIES; i++) {
      const r = os2ip(crypto.getRandomValues(new Uint8Array(kLen)));
      if (!(r.greaterEquals(n) || r.equals(0))) {
        return r;
      }
    }
    throw new Error("reached maximum tries for random integer generation");
  }
  var NATIVE_SUPPORT_NAME = "RSA-RAW";
  async function rsaRawBlingSign(privateKey, blindMsg) {
    if (privateKey.algorithm.name !== NATIVE_SUPPORT_NAME) {
      privateKey = await crypto.subtle.importKey("pkcs8", await crypto.subtle.exportKey("pkcs8", privateKey), { ...privateKey.algorithm, name: NATIVE_SUPPORT_NAME }, privateKey.extractable, privateKey.usages);
    }
    const signature = await crypto.subtle.sign({ name: privateKey.algorithm.name }, privateKey, blindMsg);
    return new Uint8Array(signature);
  }

  // node_modules/@cloudflare/blindrsa-ts/lib/src/blindrsa.js
  var PrepareType;
  (function(PrepareType2) {
    PrepareType2[PrepareType2["Deterministic"] = 0] = "Deterministic";
    PrepareType2[PrepareType2["Randomized"] = 32] = "Randomized";
  })(PrepareType || (PrepareType = {}));
  var _BlindRSA = class _BlindRSA {
    constructor(params) {
      __publicField(this, "params");
      this.params = params;
      switch (params.prepareType) {
        case PrepareType.Deterministic:
        case PrepareType.Randomized:
          return;
        default:
          assertNever("PrepareType", params.prepareType);
      }
    }
    toString() {
      const hash = this.params.hash.replace("-", "");
      const pssType = "PSS" + (this.params.saltLength === 0 ? "ZERO" : "");
      const prepare = PrepareType[this.params.prepareType];
      return `RSABSSA-${hash}-${pssType}-${prepare}`;
    }
    prepare(msg) {
      const msg_prefix_len = this.params.prepareType;
      const msg_prefix = crypto.getRandomValues(new Uint8Array(msg_prefix_len));
      return joinAll([msg_prefix, msg]);
    }
    // Returns the parameters of the input key: the JSONWebKey data, the length
    // in bits and in bytes of the modulus, and the hash function used.
    async extractKeyParams(key, type) {
      if (key.type !== type || key.algorithm.name !== _BlindRSA.NAME) {
        throw new Error(`key is not ${_BlindRSA.NAME}`);
      }
      if (!key.extractable) {
        throw new Error("key is not extractable");
      }
      const { modulusLength: modulusLengthBits, hash: hashFn } = key.algorithm;
      const modulusLengthBytes = Math.ceil(modulusLengthBits / 8);
      const hash = hashFn.name;
      if (hash.toLowerCase() !== this.params.hash.toLowerCase()) {
        throw new Error(`hash is not ${this.params.hash}`);
      }
      const jwkKey = await crypto.subtle.exportKey("jwk", key);
      return { jwkKey, modulusLengthBits, modulusLengthBytes, hash };
    }
    async blind(publicKey, msg) {
      const { jwkKey, modulusLengthBits: modulusLength, modulusLengthBytes: kLen, hash } = await this.extractKeyParams(publicKey, "public");
      if (!jwkKey.n || !jwkKey.e) {
        throw new Error("key has invalid parameters");
      }
      const n = sjcl_default.bn.fromBits(sjcl_default.codec.base64url.toBits(jwkKey.n));
      const e = sjcl_default.bn.fromBits(sjcl_default.codec.base64url.toBits(jwkKey.e));
      const pk = { e, n };
      const opts = { sLen: this.params.saltLength, hash };
      const encoded_msg = await emsa_pss_encode(msg, modulusLength - 1, opts);
      const m = os2ip(encoded_msg);
      const c = is_coprime(m, n);
      if (!c) {
        throw new Error("invalid input");
      }
      const r = random_integer_uniform(n, kLen);
      let inv;
      try {
        inv = i2osp(r.inverseMod(n), kLen);
      } catch (e2) {
        throw new Error(`blinding error: ${e2.toString()}`);
      }
      const x = rsavp1(pk, r);
      const z = m.mulmod(x, n);
      const blindedMsg = i2osp(z, kLen);
      return { blindedMsg, inv };
    }
    async blindSign(privateKey, blindMsg) {
      if (this.params.supportsRSARAW) {
        return rsaRawBlingSign(privateKey, blindMsg);
      }
      const { jwkKey, modulusLengthBytes: kLen } = await this.extractKeyParams(privateKey, "private");
      if (!jwkKey.n || !jwkKey.d || !jwkKey.e) {
        throw new Error("key has invalid parameters");
      }
      const n = sjcl_default.bn.fromBits(sjcl_default.codec.base64url.toBits(jwkKey.n));
      const d = sjcl_default.bn.fromBits(sjcl_default.codec.base64url.toBits(jwkKey.d));
      const e = sjcl_default.bn.fromBits(sjcl_default.codec.base64url.toBits(jwkKey.e));
      const sk = { n, d };
      const pk = { n, e };
      const m = os2ip(blindMsg);
      const s = rsasp1(sk, m);
      const mp = rsavp1(pk, s);
      if (!m.equals(mp)) {
        throw new Error("signing failure");
      }
      return i2osp(s, kLen);
    }
    async finalize(publicKey, msg, blindSig, inv) {
      const { jwkKey, modulusLengthBytes: kLen } = await this.extractKeyParams(publicKey, "public");
      if (!jwkKey.n) {
        throw new Error("key has invalid parameters");
      }
      const n = sjcl_default.bn.fromBits(sjcl_default.codec.base64url.toBits(jwkKey.n));
      if (inv.length != kLen) {
        throw new Error("unexpected input size");
      }
      const rInv = os2ip(inv);
      if (blindSig.length != kLen) {
        throw new Error("unexpected input size");
      }
      const z = os2ip(blindSig);
      const s = z.mulmod(rInv, n);
      const sig = i2osp(s, kLen);
      const algorithm = { name: _BlindRSA.NAME, saltLength: this.params.saltLength };
      if (!await crypto.subtle.verify(algorithm, publicKey, sig, msg)) {
        throw new Error("invalid signature");
      }
      return sig;
    }
    static generateKey(algorithm) {
      return crypto.subtle.generateKey({ ...algorithm, name: _BlindRSA.NAME }, true, [
        "sign",
        "verify"
      ]);
    }
    generateKey(algorithm) {
      return _BlindRSA.generateKey({ ...algorithm, hash: this.params.hash });
    }
    verify(publicKey, signature, message) {
      return crypto.subtle.verify({ name: _BlindRSA.NAME, saltLength: this.params.saltLength }, publicKey, signature, message);
    }
  };
  __publicField(_BlindRSA, "NAME", "RSA-PSS");
  var BlindRSA = _BlindRSA;

  // node_modules/@cloudflare/blindrsa-ts/lib/src/index.js
  var Params = {
    RSABSSA_SHA384_PSS_Randomized: {
      name: "RSABSSA-SHA384-PSS-Randomized",
      hash: "SHA-384",
      saltLength: 48,
      prepareType: PrepareType.Randomized
    },
    RSABSSA_SHA384_PSS_Deterministic: {
      name: "RSABSSA-SHA384-PSS-Deterministic",
      hash: "SHA-384",
      saltLength: 48,
      prepareType: PrepareType.Deterministic
    },
    RSABSSA_SHA384_PSSZERO_Randomized: {
      name: "RSABSSA-SHA384-PSSZERO-Randomized",
      hash: "SHA-384",
      saltLength: 0,
      prepareType: PrepareType.Randomized
    },
    RSABSSA_SHA384_PSSZERO_Deterministic: {
      name: "RSABSSA-SHA384-PSSZERO-Deterministic",
      hash: "SHA-384",
      saltLength: 0,
      prepareType: PrepareType.Deterministic
    },
    RSAPBSSA_SHA384_PSS_Randomized: {
      name: "RSAPBSSA-SHA384-PSS-Randomized",
      hash: "SHA-384",
      saltLength: 48,
      prepareType: PrepareType.Randomized
    },
    RSAPBSSA_SHA384_PSS_Deterministic: {
      name: "RSAPBSSA-SHA384-PSS-Deterministic",
      hash: "SHA-384",
      saltLength: 48,
      prepareType: PrepareType.Deterministic
    },
    RSAPBSSA_SHA384_PSSZERO_Randomized: {
      name: "RSAPBSSA-SHA384-PSSZERO-Randomized",
      hash: "SHA-384",
      saltLength: 0,
      prepareType: PrepareType.Randomized
    },
    RSAPBSSA_SHA384_PSSZERO_Deterministic: {
      name: "RSAPBSSA-SHA384-PSSZERO-Deterministic",
      hash: "SHA-384",
      saltLength: 0,
      prepareType: PrepareType.Deterministic
    }
  };
  var RSABSSA = {
    SHA384: {
      generateKey: (algorithm) => BlindRSA.generateKey({ ...algorithm, hash: "SHA-384" }),
      PSS: {
        Randomized: (params = { supportsRSARAW: false }) => new BlindRSA({ ...Params.RSABSSA_SHA384_PSS_Randomized, ...params }),
        Deterministic: (params = { supportsRSARAW: false }) => new BlindRSA({ ...Params.RSABSSA_SHA384_PSS_Deterministic, ...params })
      },
      PSSZero: {
        Randomized: (params = { supportsRSARAW: false }) => new BlindRSA({ ...Params.RSABSSA_SHA384_PSSZERO_Randomized, ...params }),
        Deterministic: (params = { supportsRSARAW: false }) => new BlindRSA({ ...Params.RSABSSA_SHA384_PSSZERO_Deterministic, ...params })
      }
    }
  };
  return __toCommonJS(entry_exports);
})();
