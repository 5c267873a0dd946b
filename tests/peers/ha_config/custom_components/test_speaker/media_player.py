"""The one thing a real speaker does with ``tts.speak``: resolve the media source to the URL it will fetch.

Each resolved URL goes on ``hass.data["test_speaker"]`` (an ``asyncio.Queue``); the driver fetches it from
Home Assistant's HTTP server as a speaker on the network would.
"""

from __future__ import annotations

import asyncio

from homeassistant.components import media_source
from homeassistant.components.media_player import (
    MediaPlayerEntity,
    MediaPlayerEntityFeature,
    MediaPlayerState,
)


async def async_setup_platform(hass, config, async_add_entities, discovery_info=None):
    hass.data.setdefault("test_speaker", asyncio.Queue())
    async_add_entities([TestSpeaker()])


class TestSpeaker(MediaPlayerEntity):
    _attr_name = "Test speaker"
    _attr_state = MediaPlayerState.IDLE
    _attr_supported_features = MediaPlayerEntityFeature.PLAY_MEDIA | MediaPlayerEntityFeature.MEDIA_ANNOUNCE

    async def async_play_media(self, media_type, media_id, **kwargs) -> None:
        if media_source.is_media_source_id(media_id):
            media_id = (await media_source.async_resolve_media(self.hass, media_id, self.entity_id)).url
        self.hass.data["test_speaker"].put_nowait(media_id)
