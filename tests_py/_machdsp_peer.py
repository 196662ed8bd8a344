"""A MachDSP servo on a pseudo-terminal, for the Python tests (the Go tests' is
gosrc/internal/machdsptest): a thread speaks the servo's side of vortex's protocol on
the pty's master while vortexgo's driver opens the slave as its serial port.

With ``model`` (the virtual instrument's libvgvirtual.so, already loaded in this process
by the fake digitizer), the servo is on the model's timeline: its sample ``k`` (counted
from the stream's reset) is A-line ``k`` of the virtual digitizer, published with
``vgv_galvo_write`` in the model's volts (full scale, 32767 codes, is 10 V: with
``degree_scale`` 15 and the model's default 10/15 V per unit, a stream value in scan
units lands where DAQmx's does); block writes wait for room in the servo's buffer as the
A-line clock (``vgv_now_alines``) drains it, and a buffer run dry while streaming is the
servo's underflow. Without a model the servo takes every block at once.

Faults (``fault``, from block write number ``at`` on): ``"framing"`` (a stray byte before
the reply), ``"servo_error"`` (MsgError: UART Rx, invalid message), ``"silent"`` (no
reply), ``"hangup"`` (the master closed: a cable pulled). ``mute = True`` makes the servo
drop every request from then on (a servo that stopped answering), ``mute = False`` answers
again; ``mute_after = n`` mutes it once it has received n requests (a servo that goes
quiet part way through a configuration); ``unknown`` counts requests of a type the servo does not know (bytes that were not a
request of this host: a stream another process corrupted).
"""

from __future__ import annotations

import ctypes
import os
import select
import struct
import threading
import time
from typing import Optional

HEADER = struct.Struct("<6H")
SETTINGS = struct.Struct("<BBHHHBBHHHHH")
STATUS = struct.Struct("<HHHHBx")
MAGIC = 0x1234
(HELLO, PREAD, PWRITE, PRESET, START, STOP, RESET, STATUS_, BWRITE, PING, ERROR, HARD) = (
    0, 1, 2, 3, 10, 12, 13, 14, 20, 30, 40, 41)


class Peer:
    def __init__(self, model: Optional[ctypes.CDLL] = None, fault: str = "", at: int = 0,
                 max_buffer_samples: int = 16384) -> None:
        self.master, self._slave = os.openpty()  # the slave stays open: the pty lives until close()
        self.path = os.ttyname(self._slave)
        self.model, self.fault, self.at = model, fault, at
        self.max_buffer = max_buffer_samples
        if model is not None:
            model.vgv_galvo_write.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.POINTER(ctypes.c_double),
                                              ctypes.c_int64]
            model.vgv_now_alines.restype = ctypes.c_int64
        self.commands: list[int] = []
        self.codes: list[int] = []  # x, y of every sample since the last stream reset
        self.blocks = 0
        self.streaming = False
        self.latched = (0, 0)
        self.mute = False
        self.mute_after: Optional[int] = None
        self.unknown = 0
        self._reset_settings()
        self._closed = False
        self._t = threading.Thread(target=self._serve, name="machdsp-peer", daemon=True)
        self._t.start()

    def _reset_settings(self) -> None:
        self.settings = [1, 1, 1, 100, self.max_buffer, 0, 0, 0, 1, 1000, 1, 1000]

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            try:
                os.close(self.master)
            except OSError:
                pass
        self._t.join(5)
        try:
            os.close(self._slave)
        except OSError:
            pass

    def _read(self, n: int) -> bytes:
        out = b""
        while len(out) < n:
            if self._closed:
                raise EOFError
            r, _, _ = select.select([self.master], [], [], 0.05)
            if not r:
                continue
            try:
                b = os.read(self.master, n - len(out))
            except OSError:
                raise EOFError from None
            if not b:
                raise EOFError
            out += b
        return out

    def _reply(self, cmd: int, payload: bytes = b"", *params: int) -> None:
        p = (list(params) + [0, 0, 0, 0])[:4]
        os.write(self.master, HEADER.pack(cmd, len(payload), *p) + payload)

    def _serve(self) -> None:
        try:
            while True:
                h = HEADER.unpack(self._read(HEADER.size))
                payload = self._read(h[1]) if h[1] else b""
                self.commands.append(h[0])
                if self.mute_after is not None and len(self.commands) > self.mute_after:
                    self.mute = True
                if self.mute:
                    continue
                if not self._handle(h, payload):
                    return
        except (EOFError, OSError):
            return

    def _now(self) -> int:
        return int(self.model.vgv_now_alines()) if self.model is not None and self.streaming else 0

    def _handle(self, h: tuple, payload: bytes) -> bool:
        cmd, params = h[0], h[2:]
        if cmd == HELLO:
            self._reply(HELLO, b"", params[0], 1, 2, 0)
        elif cmd == PREAD:
            self._reply(PREAD, SETTINGS.pack(*self.settings))
        elif cmd == PWRITE:
            entry, v0, v1 = params[0], params[1], params[2]
            idx = {1: 0, 2: 1, 4: 5, 5: 6, 6: 7, 7: 8, 8: 10}
            if entry == 3:
                if v0 * v1 > self.max_buffer:
                    self._reply(ERROR, b"", 8, 3)
                    return True
                self.settings[2], self.settings[3] = v0, v1
            elif entry in idx:
                if entry in (7, 8) and (v0 == 0 or v0 > 1000):
                    self._reply(ERROR, b"", 8, 4)
                    return True
                self.settings[idx[entry]] = v0
            else:
                self._reply(ERROR, b"", 8, 6)
                return True
            self._reply(PWRITE)
        elif cmd == PRESET:
            self._reset_settings()
            self._reply(PRESET)
        elif cmd == START:
            self.streaming = True
            self._reply(START)
        elif cmd == STOP:
            self.streaming = False
            self._reply(STOP)
        elif cmd == RESET:
            self.streaming, self.codes, self.latched = False, [], (0, 0)
            if self.model is not None:
                self.model.vgv_galvo_reset()
            self._reply(RESET)
        elif cmd == STATUS_:
            self._reply(STATUS_, STATUS.pack(0, 0, 0, 0, 0 if self.streaming else 1))
        elif cmd == BWRITE:
            return self._block(payload)
        elif cmd == PING:
            self._reply(PING, b"", params[0])
        elif cmd == ERROR:
            e, self.latched = self.latched, (0, 0)
            self._reply(ERROR, b"", *e)
        elif cmd == HARD:
            self._reset_settings()
        else:
            self.unknown += 1
            self._reply(ERROR, b"", 2, 7)
        return True

    def _pending(self) -> bool:
        r, _, _ = select.select([self.master], [], [], 0)
        return bool(r)

    def _block(self, payload: bytes) -> bool:
        idx = self.blocks
        self.blocks += 1
        if self.fault and idx >= self.at:
            if self.fault == "framing":
                os.write(self.master, b"\x5a")
                self._reply(BWRITE)
                return True
            if self.fault == "servo_error":
                self._reply(ERROR, b"", 2, 7)
                return True
            if self.fault == "silent":
                return True
            if self.fault == "hangup":
                self._closed = True
                os.close(self.master)
                return False
        n = len(payload) // 4
        codes = struct.unpack(f"<{2 * n}H", payload)
        capacity = self.settings[2] * self.settings[3]
        while True:
            written, used = len(self.codes) // 2, self._now()
            if self.streaming and self.model is not None and used > written and self.settings[0] == 1:
                self.streaming, self.latched = False, (3, 1)
                self._reply(ERROR, b"", 3, 1)
                return True
            if (self.model is None or written + n - used <= capacity or not self.streaming
                    or self._pending()):
                break
            time.sleep(0.0002)
        if self.model is not None:
            first = len(self.codes) // 2
            for ch in (0, 1):
                volts = (ctypes.c_double * n)(*[(c - 32768) * 10.0 / 32767 for c in codes[ch::2]])
                self.model.vgv_galvo_write(ch, first, volts, n)
        self.codes.extend(codes)
        self._reply(BWRITE)
        return True
