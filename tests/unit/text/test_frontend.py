"""Behaviour of the public text API beyond the evaluation set: robustness, phonemes, idempotence."""

from __future__ import annotations

import pytest

from wyoming_fasttts.text import latin, normalize, phonemize, pinyin
from wyoming_fasttts.text.data import load_table
from wyoming_fasttts.text.latin import phonemes, spell


@pytest.mark.parametrize(
    "text",
    ["", "   ", "😀🎉", "★★★", "...", "？！", "abc", "１２３", "\u200b你好\u3000", "𠀀", "1e10", "--5", "3//4",
     "¥", "%", "一共 123456789012345678 个", "身份证号 11010519491231002X"],
)
def test_odd_input_never_crashes(text):
    spoken = normalize(text)
    assert not any(ch.isdigit() for ch in spoken)
    assert len(pinyin(text)) == sum("\u3400" <= ch <= "\u9fff" for ch in spoken)
    phonemize(text)


@pytest.mark.parametrize(
    "text",
    ["今天是2026年11月29日，气温-3℃。", "打开Home Assistant的WiFi设置！", "你的验证码是384920。", "一个一个来"],
)
def test_normalize_is_idempotent(text):
    once = normalize(text)
    assert normalize(once) == once


def test_acronyms_are_spelled_and_words_looked_up():
    assert phonemes("GPU") == spell("GPU") and len(phonemes("GPU").split()) == 3
    assert phonemes("assistant") != spell("assistant")


def test_brand_names_are_said_as_words_not_spelled():
    """Wi-Fi is "wai fai" however it is written; camel-case names the lexicon lacks are read part by part."""
    assert phonemes("Wi-Fi") == phonemes("WiFi") == phonemes("wifi")
    assert phonemes("SmartThings") == " ".join(phonemes(w) for w in ("Smart", "Things"))
    for name in ("HomePod", "AirPods", "MacBook", "Spotify", "ESPHome", "SmartThings"):
        assert phonemes(name) != spell(name), name


def test_chinese_names_written_in_pinyin_are_read_as_their_syllables_not_spelled():
    """Meituan is 美团 to a Chinese reader; letter names would say nothing. English words keep the lexicon."""
    assert phonemes("Meituan") == phonemes("meituan") == phonemes("MeiTuan") == "mˈAtwˌɑn"  # mei tuan
    assert phonemes("Xiaodu") == "ʃˈWdˌu" and phonemes("Eleme") == "ˈəlˌəmˌə"  # x is palatal; e le me
    assert phonemes("Yuanshen") == "jwˈɛnʃˌən"  # the fewest syllables: yuan shen, not yu an shen
    for name in ("Douyin", "Pinduoduo", "Changhong", "Zhihu", "Feishu", "Haier"):
        assert phonemes(name) != spell(name) and " " not in phonemes(name), name
    assert phonemes("banana") == latin._lookup("banana")  # an English word the lexicon knows stays English
    assert phonemes("LED") == spell("LED") and phonemes("Ikea") == spell("Ikea")  # an acronym; not pinyin
    assert phonemes("Ding") == latin._lookup("Ding")  # one syllable alone is not taken for pinyin


def test_an_apostrophe_inside_a_latin_word_keeps_the_word_whole():
    """I'm is one word the lexicon knows, not I and M; a quote around words is still dropped."""
    assert normalize("好的，I’m on it, don't worry") == "好的，I'm on it，don't worry"
    assert normalize("打开'Living Room'的灯") == "打开Living Room的灯"
    assert normalize("the players' scores") == "the players scores"
    assert phonemes("I'm") == latin._lookup("I'm") and phonemes("DON'T") == latin._lookup("don't")
    assert phonemes("I'll") != phonemes("I") + " " + phonemes("ll")
    assert phonemes("McDonald's") == phonemes("McDonald") + "z" and phonemes("Boss's").endswith("ɪz")
    assert phonemes("Xi'an") == "ʃˈiˌɑn" != phonemes("Xian")  # pinyin's apostrophe parts syllables: xi an, not xian
    assert phonemes("Tian'anmen") == "tjˈɛnˌɑnmˌən"
    assert phonemes("O'Brien") == phonemes("O") + " " + phonemes("Brien")
    assert normalize("'90s 的歌") == "九零年代的歌" and normalize("the 1980s") == "the一九八零年代"  # a decade
    assert normalize("等待 90s") == "等待九十秒"  # no apostrophe: seconds


def test_chinese_names_we_know_are_said_as_their_characters_with_tones():
    """Xiaomi is said as 小米 is, tones and all; each entry's characters read back as its spelling."""
    for word, name in load_table("chinese_names.tsv"):
        assert "".join(s.rstrip("012345") for s in pinyin(name)) == word, (word, pinyin(name))
    assert phonemize("已经为您打开Meituan。") == phonemize("已经为您打开美团。")
    assert phonemize("打开Xiaomi Home Assistant") == phonemize("打开小米Home Assistant")  # the rest stays Latin
    assert phonemize("Wi-Fi和Changhong电视") == phonemize("Wi-Fi和长虹电视")  # 长 as chang, not zhang
    assert phonemize("打开MEITUAN") == phonemize("打开美团")
    assert "mˈAtwˌɑn" not in phonemize("打开Meituan")  # not the toneless syllables


def test_the_pinyin_syllables_are_the_ones_pypinyin_writes():
    from pypinyin.contrib.tone_convert import to_normal
    from pypinyin.pinyin_dict import pinyin_dict

    written = {to_normal(p, v_to_u=False) for v in pinyin_dict.values() for p in v.split(",")}
    syllables = {row[0] for row in load_table("syllables.tsv")}
    assert syllables == {s for s in written if s.isalpha() and s.isascii() and any(v in s for v in "aeiouv")}
    assert all(latin._syllable(s, "ˈ") for s in syllables)  # every one has a reading


def test_announcement_text_keeps_everything_the_user_wrote():
    """Issue 15's examples: no part of an address, version or count vanishes, and 每 is kept in rates."""
    assert normalize("网关10.0.0.254") == "网关幺零点零点零点二五四"
    assert normalize("已升级到v3.2.1") == "已升级到v三点二点一"
    assert normalize("你有999+ 条消息") == "你有九百九十九加条消息"
    assert normalize("售价¥1,299，包邮") == "售价一千二百九十九元，包邮"
    assert normalize("电价0.5元/度，停车10元/小时") == "电价五角每度，停车十元每小时"


def test_announcement_rules_from_the_second_held_out_set():
    """General rules for announce_holdout2.tsv's first-run misses, checked on sentences outside the sets."""
    # A line break is a pause; none is added after a mark or at the end.
    assert normalize("车库门\n已关闭") == "车库门，已关闭"
    assert normalize("提醒。\r\n明天交电费\n") == "提醒。明天交电费"
    # A digit glued to a Latin name does not start a ratio after a colon; a cued or bare ratio still reads 比.
    assert normalize("PM10：85μg/m³") == "PM十，八十五微克每立方米"
    assert normalize("比分3：1") == "比分三比一"
    # 至 written between clock times stays; only the range symbols read 到.
    assert normalize("9:00至18:00") == "九点至十八点"
    assert normalize("9:00-18:00") == "九点到十八点"
    # A range whose ends carry 千/万/亿 reads 到, not 负.
    assert normalize("年薪20万-30万") == "年薪二十万到三十万"
    # Dialled after 拨, and 114 is a service number; a room after 会议室 or 办公室 is read digit by digit.
    assert normalize("请拨96777") == "请拨九六七七七"
    assert normalize("号码查询114") == "号码查询幺幺四"
    assert normalize("办公室503有人") == "办公室五零三有人"


def test_announcement_rules_from_the_third_held_out_set():
    """General rules for announce_holdout3.tsv's first-run misses, checked on sentences outside the sets."""
    # Two 19xx/20xx numbers before 年 are a range of years even though 年 takes 两 after a count.
    assert normalize("1998-2003年间的老款") == "一九九八到二零零三年间的老款"
    assert normalize("2000-2500元") == "两千到两千五百元"
    # A range of full dates keeps its 到.
    assert normalize("展期2027-01-05~2027-01-09") == "展期二零二七年一月五日到二零二七年一月九日"
    # An amount is never a service number: ¥120 (and the full-width ￥) and 120,000 are money and quantities.
    assert normalize("挂号费￥120") == "挂号费一百二十元"
    assert normalize("押金¥110,000") == "押金十一万元"
    assert normalize("急救请拨打120") == "急救请拨打幺二零"
    # A landline written with spaces after its area code; a number a text is sent to.
    assert normalize("客服0571 8765 4321") == "客服零五七幺八七六五四三二幺"
    assert normalize("请发送到10658") == "请发送到幺零六五八"
    # Three or more dash-joined groups that are no date or phone number are a code; one dash is still a range.
    assert normalize("凭8-2-5014取货") == "凭八二五零幺四取货"
    assert normalize("需要3-5天") == "需要三到五天"
    assert normalize("比分2-1") == "比分二比一"  # a score, as 比分2:1 (settled 2026-12-05)
    # 批 is a measure word: two batches.
    assert normalize("分2批发货") == "分两批发货"


def test_announcement_rules_from_the_fourth_held_out_set():
    """General rules for announce_holdout4.tsv's first-run misses, checked on sentences outside the sets."""
    # A thousands separator before a unit: one quantity, not a pause.
    assert normalize("洗衣机本次用水2,400ml") == "洗衣机本次用水两千四百毫升"
    assert normalize("太阳能今天发电1,250W") == "太阳能今天发电一千二百五十瓦"
    # The end of a range before 年 is a count, like its start; two-digit years show themselves (zero-led, 98-02).
    assert normalize("电池寿命约5~8年") == "电池寿命约五到八年"
    assert normalize("保修15-20年") == "保修十五到二十年"
    assert normalize("08-12年的老车") == "零八到一二年的老车"
    assert normalize("2016-2018年间") == "二零一六到二零一八年间"
    assert normalize("1-2年级") == "一到二年级"
    # min is a unit after a number, also right after another unit (2h15min); a letter unit after a name is not.
    assert normalize("烘干还需2h15min") == "烘干还需两小时十五分钟"
    assert normalize("静置45min") == "静置四十五分钟"
    assert normalize("已运行3h") == "已运行三小时"
    assert normalize("iPhone6s") == "iPhone六s"
    # A price per unit after ¥: the slash reads 每, for the measure words prices are given per.
    assert normalize("矿泉水¥24.5/箱，大米¥3.8/斤") == "矿泉水二十四元五角每箱，大米三元八角每斤"
    assert normalize("纸巾¥12.9/袋，门票¥80/人") == "纸巾十二元九角每袋，门票八十元每人"
    assert normalize("牛奶¥59/件") == "牛奶五十九元每件"
    # The …码 of announcements are code cues; 码 alone is not (起码, 尺码).
    assert normalize("开门码：7710") == "开门码，七七幺零"
    assert normalize("提货码 3906") == "提货码三九零六"
    assert normalize("兑换码：2231") == "兑换码，二二三幺"
    assert normalize("起码3天") == "起码三天"
    assert normalize("尺码42") == "尺码四十二"
    # Measure words the table lacked take 两; a row or a class is still 二.
    assert normalize("收到2封邮件") == "收到两封邮件"
    assert normalize("客厅2盏灯，2扇窗，2顶帐篷") == "客厅两盏灯，两扇窗，两顶帐篷"
    assert normalize("发生2起事故") == "发生两起事故"
    assert normalize("坐在2排") == "坐在二排"
    # 打 a dozen takes 两; a verb that begins with 打, or 打 between two numbers, is no measure word.
    assert normalize("买了2打鸡蛋") == "买了两打鸡蛋"
    assert normalize("空调2打开") == "空调二打开"
    assert normalize("游戏里2打1") == "游戏里二打一"
    # A word that only begins with a measure word's character leaves a bare 2 its 二 (had been 周两下午).
    assert normalize("周2下午开会") == "周二下午开会"
    # A number right before a unit or a computer size is a quantity, never a service number.
    assert normalize("硬盘剩余110GB") == "硬盘剩余一百一十GB"
    assert normalize("显示器120Hz") == "显示器一百二十赫兹"
    assert normalize("有事打110") == "有事打幺幺零"
    assert normalize("请拨120") == "请拨幺二零"


def test_announcement_rules_from_the_fifth_held_out_set():
    """General rules for announce_holdout5.tsv's first-run misses, checked on sentences outside the sets."""
    # Digits joined to a Latin name before a colon are the name's, and a reading follows: no clock time.
    assert normalize("卧室PM10：35μg/m³") == "卧室PM十，三十五微克每立方米"
    assert normalize("书房CO2：820ppm") == "书房CO二，八百二十ppm"
    assert normalize("明早08:30出门，会议10:30开始") == "明早八点三十分出门，会议十点三十分开始"
    assert normalize("2026-12-01T10:30") == "二零二六年十二月一日十点三十分"  # its T unsaid since 2026-12-05
    # An m-d date (day 13-31) holds before a space and a word that only starts with a measure word's character.
    assert normalize("12-25 晚上聚餐") == "十二月二十五日晚上聚餐"
    assert normalize("11-18 下午有雨") == "十一月十八日下午有雨"
    assert normalize("10-15分钟") == "十到十五分钟"
    assert normalize("12-25℃") == "十二到二十五摄氏度"
    assert normalize("第1-15集") == "第一到十五集"
    assert normalize("需要 10-15 天") == "需要十到十五天"
    assert normalize("12-20 家店") == "十二到二十家店"
    # National service numbers read digit by digit, also after a space; a count of them is still a quantity.
    assert normalize("有问题请拨打银行客服 95566") == "有问题请拨打银行客服九五五六六"
    assert normalize("快递 95338") == "快递九五三三八"
    assert normalize("95598元") == "九万五千五百九十八元"
    # The last digits of a number given as a check are a code.
    assert normalize("银行卡末四位 0371") == "银行卡末四位零三七幺"
    assert normalize("身份证后六位 101235") == "身份证后六位幺零幺二三五"
    # After a version word a dotted number is a version; without one a year.month.day stays a date.
    assert normalize("固件 2026.01 已推送") == "固件二零二六点零一已推送"
    assert normalize("firmware 2026.11.2") == "firmware二零二六点十一点二"
    assert normalize("2026.11.29 到期") == "二零二六年十一月二十九日到期"
    assert normalize("固件更新将于2026.11.29完成") == "固件更新将于二零二六年十一月二十九日完成"
    # 第 makes an ordinal with spaces too; a count keeps 两.
    assert normalize("你排第 2 名") == "你排第二名"
    assert normalize("第 12 次") == "第十二次"
    assert normalize("还有 2 次机会") == "还有两次机会"
    # Generations up to 20后 read their digits; other numbers before 后 are amounts.
    assert normalize("20后和10后") == "二零后和一零后"
    assert normalize("20分钟后") == "二十分钟后"
    assert normalize("30后") == "三十后"
    # An account number in spaced groups is one code.
    assert normalize("缴费户号 3301 2266") == "缴费户号三三零幺二二六六"
    assert normalize("卡号 6222 0212 3456 789") == "卡号六二二二零二幺二三四五六七八九"
    assert normalize("有 2 户") == "有两户"


def test_announcement_rules_from_the_sixth_held_out_set():
    """General rules for announce_holdout6.tsv's first-run misses, checked on sentences outside the sets."""
    # A space (ASCII, U+3000, NBSP) between a number and the word after it changes no reading: years before 年,
    # 两 before a measure word, a range's far end before its measure word, two years before 年.
    assert normalize("空调是 2019 年买的") == normalize("空调是2019年买的") == "空调是二零一九年买的"
    assert normalize("是 85 年的酒") == "是八五年的酒"
    assert normalize("用了 5 年") == "用了五年"
    assert normalize("大约 2\u3000小时后") == "大约两小时后"
    assert normalize("需要 2\u00a0小时") == "需要两小时"
    assert normalize("等 2-3 天") == "等两到三天"
    assert normalize("可坐 2~4 人") == "可坐两到四人"
    assert normalize("1998-2003 年间") == "一九九八到二零零三年间"
    assert normalize("2 号线") == "二号线"
    assert normalize("第 2 站") == "第二站"
    # Stops to go and bars of signal are counts: 两.
    assert normalize("还有2站") == "还有两站"
    assert normalize("电量只剩 2 格") == "电量只剩两格"
    # A countdown's minutes may pass 24; without a countdown word such a pair is still a ratio or a score.
    assert normalize("还剩 38:05") == "还剩三十八分五秒"
    assert normalize("剩余 59:59") == "剩余五十九分五十九秒"
    assert normalize("比分 45:20") == "比分四十五比二十"
    assert normalize("45:20") == "四十五比二十"
    assert normalize("会议 10:30 开始") == "会议十点三十分开始"
    # A cued model number's dashed later groups are digits too.
    assert normalize("型号 A100-B2") == "型号A幺零零B二"
    assert normalize("型号 WD200-HX12 已连接") == "型号WD二零零HX幺二已连接"
    # Six digits starting 0, 3 or 6 after a listed company's name are its stock code; an amount stays one.
    assert normalize("中信证券 600030 涨停") == "中信证券六零零零三零涨停"
    assert normalize("平安银行 000001 今日上涨") == "平安银行零零零零零幺今日上涨"
    assert normalize("工商银行 300000 元贷款") == "工商银行三十万元贷款"
    assert normalize("集团 600000 人") == "集团六十万人"
    assert normalize("科技 123456") == "科技十二万三千四百五十六"
    # A price in 元 with two decimals, spaced or not, reads 元/角/分.
    assert normalize("股价 12.35 元") == "股价十二元三角五分"
    # A zero-led car number drops its zero after a colon too; a clock's minutes before 车 stay a time.
    assert normalize("座位：05车") == "座位，五车"
    assert normalize("8:05车到站") == "八点零五分车到站"
    # The far end of a change from a version is a version; a range of decimals keeps its digits.
    assert normalize("HAOS 13.1 → 13.12 已更新") == "HAOS十三点一到十三点十二已更新"
    assert normalize("1.5 到 2.5 倍") == "一点五到二点五倍"
    assert normalize("0.15 到 0.16") == "零点一五到零点一六"
    # An ordinal with a thousands separator keeps 二; a count takes 两.
    assert normalize("第 2,000 名") == "第二千名"
    assert normalize("共 2,000 人") == "共两千人"
    # A list item may start with a number after a space: the pause after the list number is ，.
    assert normalize("安排：\n1. 08:00 晨会\n2. 2 点取件") == "安排，一，八点晨会，二，两点取件"
    assert normalize("1.5公里") == "一点五公里"


def test_announcement_rules_from_the_seventh_held_out_set():
    """General rules for announce_holdout7.tsv's first-run misses, checked on sentences outside the sets."""
    # Two m/d dates joined by a long dash, a dash or a tilde are a range of dates when one day is 13–31.
    assert normalize("活动时间 11/15—11/30") == "活动时间十一月十五日到十一月三十日"
    assert normalize("展期 3/28-4/6 闭馆") == "展期三月二十八日到四月六日闭馆"
    assert normalize("放假 9/29～10/6") == "放假九月二十九日到十月六日"
    assert normalize("促销 6/18 — 6/20。") == "促销六月十八日到六月二十日。"
    # A single m/d, a fraction and a pair that cannot be dates read as before.
    assert normalize("5/20 见") == "五月二十日见"
    assert normalize("占 1/5") == "占五分之一"
    # Both ends in one month with the days rising are dates at any day (12/1-12/5 had read 一分之十二五分之十二).
    assert normalize("12/1-12/5 闭馆") == "十二月一日到十二月五日闭馆"
    assert normalize("1/5-1/8") == "一月五日到一月八日"
    assert normalize("3/5-2/5") == normalize("3/5") + normalize("2/5")
    assert normalize("13/14-13/20") != "十三月十四日到十三月二十日"
    # A landline with its area code in brackets: digit by digit with 1 as 幺, brackets, spaces and dashes unread.
    assert normalize("客服 (010) 6552 1188。") == "客服零幺零六五五二幺幺八八。"
    assert normalize("前台（020）8711 3456") == "前台零二零八七幺幺三四五六"
    assert normalize("传真(0571)8810-2233") == "传真零五七幺八八幺零二二三三"
    assert normalize("(0512) 668 8123") == "零五幺二六六八八幺二三"
    # Without an area code's zero, or without a number after it, brackets keep their other readings.
    assert normalize("电话 021-61234567") == "电话零二幺六幺二三四五六七"
    assert normalize("贵州茅台(600519)") == "贵州茅台六零零五幺九"
    assert normalize("共 (12) 个") == "共十二个"


def test_announcement_rules_from_the_eighth_held_out_set():
    """General rules for announce_holdout8.tsv's first-run misses that no settlement named, on sentences outside
    the sets (the settled readings it missed are tested in test_convention_settled_after_the_seventh_held_out_set)."""
    # A ~ after a temperature or a percent joins a signed value as 到 (had read 约, as before a single value).
    assert normalize("凌晨 -8°C~-3°C") == "凌晨零下八摄氏度到零下三摄氏度"
    assert normalize("收益率 -5%~-1%") == "收益率负百分之五到负百分之一"
    # Near-misses: a ~ before a single value is still 约, and one before an unsigned value 到 as before.
    assert normalize("~-3℃") == "约零下三摄氏度"
    assert normalize("-3℃~2℃") == "零下三摄氏度到二摄氏度"
    # An hour and a colon after a cue word of codes (航班, 车次) are a clock time, not the code (had read 八，零).
    assert normalize("航班 9:45 落地") == "航班九点四十五分落地"
    assert normalize("车次 21:05 发车") == "车次二十一点零五分发车"
    assert normalize("航班 CA1234") == "航班CA幺二三四"
    assert normalize("车次G7：08:00从北京南出发") == "车次G七，八点从北京南出发"
    assert normalize("订单号 20261201") == "订单号二零二六幺二零幺"
    # Letter-like symbols NFKC would make letters are emoji or decoration (ℹ️ had read i).
    assert normalize("ℹ️ 提示：请关窗") == "提示，请关窗"
    assert normalize("Ⓜ️ 地铁站到了") == "地铁站到了"
    assert normalize("Apple™ 设备已连接") == "Apple设备已连接"
    # 分辨率 after a number is no measure word 分, so a resolution stays digit by digit.
    assert normalize("1366×768 分辨率的屏幕") == "一三六六乘七六八分辨率的屏幕"
    assert normalize("3 分钟") == "三分钟"


def test_announcement_rules_from_the_ninth_held_out_set():
    """General rules for announce_holdout9.tsv's first-run miss, on sentences outside the sets."""
    # The Latin word ID is a cue for a code, like 编号 and 账号: digit by digit with 1 as 幺, after a space, a colon or
    # 是 too (five digits after ID and a space had read as a number).
    assert normalize("用户 ID 523817 已登录") == "用户ID五二三八幺七已登录"
    assert normalize("账户 ID：60213") == "账户ID，六零二幺三"
    assert normalize("网关的 ID号 71025") == "网关的ID号七幺零二五"
    assert normalize("传感器 ID 是 31") == "传感器ID是三幺"
    # Near-misses: a Latin cue word is a whole word (the ID in RAID is none), and ID without digits is a name.
    assert normalize("硬盘组成 RAID 10 阵列") == "硬盘组成RAID十阵列"
    assert normalize("Apple ID 已登录") == "Apple ID已登录"
    assert normalize("QQ 2851037") == "QQ二八五幺零三七"


def test_announcement_rules_from_the_tenth_held_out_set():
    """General rules for announce_holdout10.tsv's three first-run misses, on sentences outside the sets."""
    # A second gate later in the clause is a gate too, its number a number; a letter and digits elsewhere stay a code.
    assert normalize("检票口 A12 临时改为 A15") == "检票口A十二临时改为A十五"
    assert normalize("登机口 C21，行李转盘 B113") == "登机口C二十一，行李转盘B幺幺三"
    # A code cue's digits followed by a measure word count something: 次 after 电话 is calls, not a phone number.
    assert normalize("本周未接电话 3 次") == "本周未接电话三次"
    assert normalize("已拨打 12345 热线 2 次") == "已拨打幺二三四五热线两次"
    assert normalize("电话 13912345678") == "电话幺三九幺二三四五六七八"
    # 比上… and 比前… before a minus make it a change (减), as 较 does.
    assert normalize("用水量比上一周 -8%") == "用水量比上一周减百分之八"
    assert normalize("比前两天 -3℃") == "比前两天减三摄氏度"
    assert normalize("室外 -3℃") == "室外零下三摄氏度"


def test_convention_settled_for_the_tenth_held_out_sets_open_questions():
    """Readings announce_holdout10.tsv's writer found open, settled 2026-12-04 (tests/unit/text/README.md), on
    sentences outside the sets."""
    # Units said in Chinese; consumption per hundred kilometres as a car's display says it.
    assert normalize("水泵 2800rpm，待机 3mA，电池 74Wh") == "水泵两千八百转每分钟，待机三毫安，电池七十四瓦时"
    assert normalize("平均 7.2L/100km，电耗 14kWh/100km") == "平均七点二升每百公里，电耗十四千瓦时每百公里"
    # 2大1小: two counts (两); TDS and pH are readings' names, their values numbers.
    assert normalize("预订 2大2小") == "预订两大两小"
    assert normalize("净水器 TDS 135，pH 7.4") == "净水器TDS一百三十五，pH七点四"
    # Three or four digits before a product line's suffix word are a model number; one or two a generation.
    assert normalize("西数 770 Pro 与小米 14 Ultra") == "西数七七零Pro与小米十四Ultra"
    # A hyphen between two letters inside a code is a space, as between two Latin words.
    assert normalize("海康 DS-K1T 门禁") == "海康DS K幺T门禁"
    # Codes: a zero-led number before 号, four-digit groups with no cue word, a port.
    assert normalize("请 017 号到窗口") == "请零幺七号到窗口"
    assert normalize("转入 6217 0012 3456 7890") == "转入六二幺七零零幺二三四五六七八九零"
    assert normalize("MQTT 端口 8883") == "MQTT端口八八八三"
    # An aside in round brackets is read with a pause on each side; an emoji between words is a pause.
    assert normalize("周四（12月10日）停电") == "周四，十二月十日，停电"
    assert normalize("快递已签收 📦 请查收") == "快递已签收，请查收"
    assert normalize("下雨了🌧️记得收衣服") == "下雨了，记得收衣服"
    # Landlines keep their bracketed area code joined; a leading or trailing emoji says nothing (a heading's 【】 a
    # pause after it since 2026-12-06: test_a_bracketed_heading_is_followed_by_a_pause).
    assert normalize("(021) 6234 5678") == "零二幺六二三四五六七八"
    assert normalize("【通知】明天停水 💧") == "通知，明天停水"


def test_front_end_gaps_closed_after_the_ninth_held_out_set():
    """Gaps found by reading the front end after the ninth set (none in the sets), fixed as general rules; each on
    sentences outside the sets, with the near-misses that must keep their old reading."""
    # A currency word written after an amount with a currency sign is said once: after a sign whose word does not end
    # in it, the sign's word names the currency before the amount and the written 元 is its unit.
    assert normalize("台北民宿 NT$1,680元一晚") == "台北民宿新台币一千六百八十元一晚"
    assert normalize("车票NT$45-60元") == "车票新台币四十五到六十元"
    assert normalize("找零NT$7.5元") == "找零新台币七元五角"
    # 美元 and 港元 already say 元: the written one is not said a second time.
    assert normalize("押金US$300元") == "押金三百美元"
    assert normalize("港币 HK$88元") == "港币八十八港元"
    assert normalize("奶茶¥18元") == "奶茶十八元"
    # Near-misses: without a written 元 the sign's word follows the amount, as the sets read it.
    assert normalize("夜市小吃 NT$80") == "夜市小吃八十新台币"
    assert normalize("门票HK$160") == "门票一百六十港元"
    # An offset after UTC/GMT written with minutes is a span of hours and minutes, its sign said (+ 加, - 减): the +
    # had vanished and the pair read as a clock time. A zero part is not said, as in a countdown.
    assert normalize("印度使用 UTC+05:30") == "印度使用UTC加五小时三十分"
    assert normalize("尼泊尔是 GMT+5:45") == "尼泊尔是GMT加五小时四十五分"
    assert normalize("巴西利亚 UTC-03:00") == "巴西利亚UTC减三小时"
    assert normalize("服务器 UTC+02:00") == "服务器UTC加两小时"
    # Near-misses: hours alone stay as the sets read them; a clock time after the zone is still one.
    assert normalize("北京时间 UTC+8") == "北京时间UTC加八"
    assert normalize("UTC-5，现在 09:30") == "UTC减五，现在九点三十分"
    # A reading's name (a Latin label or unit, or a Chinese one) before a number makes it that value: not a model
    # number, not a service number (120 had been the ambulance line after BPM and 心率).
    assert normalize("运动手环 BPM 110") == "运动手环BPM一百一十"
    assert normalize("风扇 RPM 1450") == "风扇RPM一千四百五十"
    assert normalize("二氧化碳 ppm 860") == "二氧化碳ppm八百六十"
    assert normalize("环境噪音 dB 119") == "环境噪音dB一百一十九"
    assert normalize("静息心率120") == "静息心率一百二十"
    assert normalize("室外 AQI122") == "室外AQI一百二十二"
    # Near-misses: model numbers after other words, GB's standard numbers and dialled lines keep their digits.
    assert normalize("显卡 GTX 1660") == "显卡GTX幺六六零"
    assert normalize("字符集 GB 2312") == "字符集GB二三幺二"
    assert normalize("头盔 DB2100") == "头盔DB二幺零零"
    assert normalize("请拨打 120") == "请拨打幺二零"
    # Two-digit numbers in a range before 年 that alone would be years are years, digit by digit, as 95年 is; 间
    # after the range is its own "between", no count.
    assert normalize("在85-89年间出生") == "在八五到八九年间出生"
    assert normalize("这首歌流行于93-97年") == "这首歌流行于九三到九七年"
    # Near-misses: counts stay counts (one digit, below 30, a count word), and 年代 is said 九十年代.
    assert normalize("质保10-15年间免费") == "质保十到十五年间免费"
    assert normalize("需要2-3年") == "需要两到三年"
    assert normalize("有40-60年历史") == "有四十到六十年历史"
    assert normalize("80-90年代的老歌") == "八十到九十年代的老歌"
    # A Home Assistant entity id: domain, dot 点, object id with its underscores as spaces; no sentence stop.
    assert normalize("switch.garage_door 已关闭") == "switch点garage door已关闭"
    assert normalize("实体 binary_sensor.front_window 报警") == "实体binary sensor点front window报警"
    assert normalize("已打开 fan.bedroom。") == "已打开fan点bedroom。"
    # Near-misses: a capitalised word and a sentence's stop keep their dots; a host name is said as typed (its own
    # rule, settled 2026-12-05: test_addresses_and_standards_are_said_as_typed).
    assert normalize("访问 update.example.com") == "访问update点example点com"
    assert normalize("打开 Light.然后关门") == "打开Light。然后关门"
    # After a timer's cue word, or one of a time taken, m:ss is minutes and seconds, as after 还剩.
    assert normalize("计时器 12:40 后响铃") == "计时器十二分四十秒后响铃"
    assert normalize("本次用时 03:27") == "本次用时三分二十七秒"
    assert normalize("通话时长 1:02:05") == "通话时长一小时两分五秒"
    # Near-misses: 定时 sets a time of day, and a bare pair is a clock time.
    assert normalize("定时 07:30 开机") == "定时七点三十分开机"
    assert normalize("会议 05:08 开始") == "会议五点零八分开始"
    # = is 等于 wherever it stands (it had vanished after a word), >= and <= as ≥ and ≤; a run of = is a divider.
    assert normalize("阈值=35℃") == "阈值等于三十五摄氏度"
    assert normalize("x = 12") == "x等于十二"
    assert normalize("湿度>=70%时除湿") == "湿度大于等于百分之七十时除湿"
    assert normalize("电量<=20%") == "电量小于等于百分之二十"
    assert normalize("======\n明日提醒") == "明日提醒"


def test_nothing_the_user_wrote_is_dropped_around_latin_names():
    """Bugs around Latin letters: a dotted standard name, a reading right after a name, a year-version, a range."""
    # Letters, a dot and digits: 点, then the digits as after letters (three or more one by one); No. is 号.
    assert normalize("摄像头使用H.264编码") == "摄像头使用H点二六四编码"
    assert normalize("电话网关支持G.711") == "电话网关支持G点七幺幺"
    assert normalize("杂志Vol.3到货") == "杂志Vol点三到货"
    assert normalize("No.7") == "七号"
    assert normalize("苏E.12345") == "苏E幺二三四五"
    # A symbol unit right after a name is still a reading; a letter unit stays the name's.
    assert normalize("CPU72°C") == "CPU七十二摄氏度"
    assert normalize("NAS硬盘HDD41℃") == "NAS硬盘HDD四十一摄氏度"
    assert normalize("LED5W") == "LED五W"
    # Joined to a name (or a year.month after one), a dotted number is a version; a reading is still a decimal.
    assert normalize("HAOS2025.11") == "HAOS二零二五点十一"
    assert normalize("Home Assistant 2025.1 已发布") == "Home Assistant二零二五点一已发布"
    assert normalize("iOS17.10") == "iOS十七点十"
    assert normalize("PM2.5") == "PM二点五"
    assert normalize("CPU45.25%") == "CPU百分之四十五点二五"
    assert normalize("GPU85.5°C") == "GPU八十五点五摄氏度"
    # A dash between values that end in letters is a range, not a minus; in a code it is still not read.
    assert normalize("支持720P-1080P") == "支持七二零P到幺零八零P"
    assert normalize("频段2.4GHz-5GHz") == "频段二点四GHz到五GHz"
    assert normalize("输入5V-12V") == "输入五伏到十二伏"
    assert normalize("KFR-35GW-2") == "KFR三五GW二"
    assert normalize("i7-12700H") == "i七幺二七零零H"


# The cases announce_holdout3.tsv's writer found open, settled in the convention on 2026-12-01 (fourth session);
# each checked on sentences outside the sets, with near-misses that must keep their old reading.
def test_convention_a_bare_2_on_a_scale_is_er():
    """A temperature, 级 or 档 names a point on a scale, not a count: 二; measure words still take 两."""
    assert normalize("卧室温度2℃，注意保暖") == "卧室温度二摄氏度，注意保暖"
    assert normalize("室外2°C") == "室外二摄氏度"
    assert normalize("今晚最低气温-2度") == "今晚最低气温零下二度"
    assert normalize("明天东北风2级") == "明天东北风二级"
    assert normalize("加湿器已调到2档") == "加湿器已调到二档"
    assert normalize("风扇开2挡") == "风扇开二挡"
    assert normalize("第2档") == "第二档"
    assert normalize("风力2-3级") == "风力二到三级"
    # Near-misses: counts keep 两, including 度 of electricity; 2 inside a larger number is 二 as before.
    assert normalize("买了2个灯泡") == "买了两个灯泡"
    assert normalize("还要2天") == "还要两天"
    assert normalize("昨天用了2度电") == "昨天用了两度电"
    assert normalize("目标温度22℃") == "目标温度二十二摄氏度"


def test_convention_an_ip_port_is_read_after_maohao():
    """The port belongs to the address: digit by digit after 冒号, not a pause and a quantity."""
    assert normalize("面板地址192.168.1.10:8123") == "面板地址幺九二点幺六八点幺点幺零冒号八幺二三"
    assert normalize("MQTT服务器10.0.0.2:1883已连接") == "MQTT服务器幺零点零点零点二冒号幺八八三已连接"
    assert normalize("请访问192.168.31.5：8080") == "请访问幺九二点幺六八点三幺点五冒号八零八零"
    # Near-misses: an address without a port, and a clock time after one, are read as before.
    assert normalize("网关192.168.1.1已上线") == "网关幺九二点幺六八点幺点幺已上线"
    assert normalize("主机192.168.1.2在08:30重启") == "主机幺九二点幺六八点幺点二在八点三十分重启"


def test_convention_frequencies_keep_their_latin_unit():
    """GHz, MHz and kHz are said as written, like GB; plain Hz is still 赫兹."""
    assert normalize("路由器的2.4GHz频段") == "路由器的二点四GHz频段"
    assert normalize("切换到5GHz Wi-Fi") == "切换到五GHz Wi Fi"
    assert normalize("网关用433MHz射频") == "网关用四百三十三MHz射频"
    # A bare 2 before any unit of measure is 两 (settled later, fourth session), Latin units included.
    assert normalize("提示音2kHz") == "提示音两kHz"
    # Near-misses: hertz alone and computer sizes.
    assert normalize("电网频率50Hz") == "电网频率五十赫兹"
    assert normalize("内存2GB") == "内存两GB"


def test_convention_video_resolutions_are_read_digit_by_digit():
    """1080P is a name said digit by digit; 4K and an air conditioner's 1.5P (horsepower) read as numbers."""
    assert normalize("摄像头画质已切换为1080P") == "摄像头画质已切换为幺零八零P"
    assert normalize("门铃录像720P，回放1440p") == "门铃录像七二零P，回放幺四四零p"
    assert normalize("投影仪支持2160P") == "投影仪支持二幺六零P"
    assert normalize("4K电视") == "四K电视"
    assert normalize("1.5P空调") == "一点五P空调"
    assert normalize("3P空调") == "三P空调"


def test_convention_letters_joined_to_digits():
    """Three or more digits after letters are a model number (digit by digit), one or two read as a number,
    and a dash makes any of them a code; flight and train numbers, versions and readings keep theirs."""
    assert normalize("ESP8266模块离线") == "ESP八二六六模块离线"
    assert normalize("RTX4090显卡") == "RTX四零九零显卡"
    assert normalize("rtx4090") == "rtx四零九零"
    assert normalize("Xbox360已关机") == "Xbox三六零已关机"
    assert normalize("ESP32开发板") == "ESP三十二开发板"
    assert normalize("PS5手柄") == "PS五手柄"
    assert normalize("热水器显示E21") == "热水器显示E二十一"
    assert normalize("显示E-101") == "显示E幺零幺"
    assert normalize("显示E-21") == "显示E二幺"
    assert normalize("卧室KFR-26GW") == "卧室KFR二六GW"
    assert normalize("i9-13900K") == "i九幺三九零零K"
    # Near-misses: flights and trains (already codes), versions, a percentage after a Latin name.
    assert normalize("航班CA1234已登机") == "航班CA幺二三四已登机"
    assert normalize("G1234次列车") == "G幺二三四次列车"
    assert normalize("已升级到v3.2.1") == "已升级到v三点二点一"
    assert normalize("iOS 18.2") == "iOS十八点二"
    assert normalize("CPU100%") == "CPU百分之百"
    assert normalize("CO2偏高") == "CO二偏高"


def test_convention_clock_seconds_and_zero_led_counts():
    """Seconds read like minutes (零 before a single digit); a count drops its leading zero, a code keeps it."""
    assert normalize("最后一次触发在08:05:02") == "最后一次触发在八点零五分零二秒"
    assert normalize("21:30:09关门") == "二十一点三十分零九秒关门"
    assert normalize("延时02秒后关灯") == "延时两秒后关灯"
    assert normalize("05分钟后提醒") == "五分钟后提醒"
    assert normalize("还剩02分05秒") == "还剩两分五秒"
    # Near-misses: minutes of a clock keep 零, and a code keeps its zeros.
    assert normalize("08:05出发") == "八点零五分出发"
    assert normalize("验证码0205") == "验证码零二零五"


def test_convention_a_long_dash_is_a_pause():
    """—— (or — between words) is a pause; between two numbers it is a range, like -."""
    assert normalize("门已锁好——晚安") == "门已锁好，晚安"
    assert normalize("提醒—别忘了带伞") == "提醒，别忘了带伞"
    assert normalize("洗衣机——洗涤完成——请晾衣") == "洗衣机，洗涤完成，请晾衣"
    assert normalize("―― 来自小爱") == "来自小爱"
    # Near-misses: a range of years or times, and a hyphen inside a Latin name.
    assert normalize("1998—2003年间") == "一九九八到二零零三年间"
    assert normalize("营业9:00—18:00") == "营业九点到十八点"
    assert normalize("10点—12点") == "十点到十二点" and normalize("第3名—第5名") == "第三名到第五名"  # values' words
    assert normalize("共3个—分别是") == "共三个，分别是"
    assert normalize("Wi-Fi已连接") == "Wi Fi已连接"



# Settled later on 2026-12-01 (fourth session), for the cases announce_holdout4.tsv's writer found open
# (tests/unit/text/README.md). Each rule on sentences outside the sets, with near-misses that must not change.


def test_convention_hz_alone_and_data_rates():
    """Hz alone is 赫兹; kHz/MHz/GHz stay Latin; Mbps/Gbps are 兆/吉比特每秒, MB/s and GB/s keep MB/GB before 每秒."""
    assert normalize("音箱低频165Hz") == "音箱低频一百六十五赫兹"
    assert normalize("低音炮截止频率120Hz") == "低音炮截止频率一百二十赫兹"
    assert normalize("宽带升级到500Mbps") == "宽带升级到五百兆比特每秒"
    assert normalize("万兆网口10Gbps") == "万兆网口十吉比特每秒"
    assert normalize("硬盘读取550MB/s") == "硬盘读取五百五十MB每秒"
    assert normalize("NVMe写入3.5GB/s") == "NVMe写入三点五GB每秒"
    # Near-misses: prefixed frequencies and sizes keep their Latin unit.
    assert normalize("采样率44.1kHz") == "采样率四十四点一kHz"
    assert normalize("主频3.2GHz") == "主频三点二GHz"
    assert normalize("剩余12GB") == "剩余十二GB"


def test_convention_zero_led_letter_codes():
    """Letters and digits with a leading zero are a code (E05 → E零五); without one, one or two digits are a number."""
    assert normalize("空调报E05故障") == "空调报E零五故障"
    assert normalize("OBD读到P0420") == "OBD读到P零四二零"
    assert normalize("洗衣机显示F03") == "洗衣机显示F零三"
    # Near-misses: product-name numbers.
    assert normalize("热水器显示E5") == "热水器显示E五"
    assert normalize("热水器显示E21") == "热水器显示E二十一"
    assert normalize("PS5手柄") == "PS五手柄"


def test_convention_train_and_flight_numbers_and_plates_digit_by_digit():
    """Trains and flights at any length, and plates, are digit by digit; the product-name rule is for names only."""
    assert normalize("G7次列车晚点") == "G七次列车晚点"
    assert normalize("乘坐Z98次") == "乘坐Z九八次"
    assert normalize("D3列车已进站") == "D三列车已进站"
    assert normalize("K1234次") == "K幺二三四次"
    assert normalize("MU52航班已到达") == "MU五二航班已到达"
    assert normalize("CA12航班延误") == "CA幺二航班延误"
    assert normalize("乘坐CA12从北京飞往上海") == "乘坐CA幺二从北京飞往上海"
    assert normalize("航班MU5已起飞") == "航班MU五已起飞"
    assert normalize("苏A·9H62Q已驶入车库") == "苏A九H六二Q已驶入车库"
    assert normalize("京A12345") == "京A幺二三四五"
    # Near-misses: names without a train or flight word, and gates, read as numbers.
    assert normalize("PS5到货了") == "PS五到货了"
    assert normalize("ESP32开发板") == "ESP三十二开发板"
    assert normalize("请到登机口B12") == "请到登机口B十二"
    assert normalize("G15高速拥堵") == "G十五高速拥堵"
    # A flying word reaches to its sentence's end, full width or not, and no further (CA12号柜台 is a counter).
    assert normalize("航班取消了！CA12号柜台") == "航班取消了！CA十二号柜台"
    assert normalize("航班取消了!CA12号柜台") == "航班取消了！CA十二号柜台"


def test_convention_dash_suffixed_and_spaced_model_numbers():
    """A dash suffix makes a name a code (ESP32-S3); a Latin word, a space and 3-4 digits is a model number."""
    assert normalize("ESP32-S3开发板") == "ESP三二S三开发板"
    assert normalize("ESP32-C3已上线") == "ESP三二C三已上线"
    assert normalize("RTX 4090显卡") == "RTX四零九零显卡"
    assert normalize("Xbox 360已关机") == "Xbox三六零已关机"
    assert normalize("GTX 1080温度正常") == "GTX幺零八零温度正常"
    # Near-misses: versions, one or two digits, a reading's name, a size and a year.
    assert normalize("iOS 18.2") == "iOS十八点二"
    assert normalize("iPhone 15 Pro") == "iPhone十五Pro"
    assert normalize("Windows 11已更新") == "Windows十一已更新"
    assert normalize("AQI 156，中度污染") == "AQI一百五十六，中度污染"
    assert normalize("硬盘剩余 500GB") == "硬盘剩余五百GB"
    assert normalize("CPU 100%") == "CPU百分之百"


def test_convention_ranges_with_one_percent_sign_or_a_leading_2():
    """One % at the end covers both ends; a 2 starting a range is 两 before a measure word, 二 before ℃/级/档."""
    assert normalize("湿度40-60%") == "湿度百分之四十到百分之六十"
    assert normalize("电量保持在20~80%") == "电量保持在百分之二十到百分之八十"
    assert normalize("降幅3-5%") == "降幅百分之三到百分之五"
    assert normalize("预计2-3天送达") == "预计两到三天送达"
    assert normalize("每次2~3粒") == "每次两到三粒"
    assert normalize("西瓜2-3kg一个") == "西瓜两到三千克一个"
    assert normalize("风力2~3级") == "风力二到三级"
    assert normalize("调到2-3档") == "调到二到三档"
    assert normalize("温差2-3℃") == "温差二到三摄氏度"
    # Near-misses: both ends marked, and a range without a leading 2.
    assert normalize("湿度40%-60%") == "湿度百分之四十到百分之六十"
    assert normalize("预计3-5天") == "预计三到五天"


def test_convention_a_bare_2_before_a_unit_is_liang():
    """2 before a unit of measure is 两 (Latin units too); before a temperature, 级 or 档 it stays 二; 2 before
    百/千/万 in any value is 两, but not in an ordinal."""
    assert normalize("称重2kg") == "称重两千克"
    assert normalize("距离2km") == "距离两公里"
    assert normalize("输出电流2A") == "输出电流两安"
    assert normalize("剩余2GB") == "剩余两GB"
    assert normalize("今天用了2度电") == "今天用了两度电"
    assert normalize("蜂鸣器2kHz") == "蜂鸣器两kHz"
    assert normalize("电池2000mAh") == "电池两千毫安时"
    assert normalize("烤箱预热200℃") == "烤箱预热两百摄氏度"
    # Near-misses: a temperature, a scale, a seat, an ordinal, and a decimal.
    assert normalize("室外2℃") == "室外二摄氏度"
    assert normalize("风力2级") == "风力二级"
    assert normalize("座位2A") == "座位二A"
    assert normalize("第200名") == "第二百名"
    assert normalize("剩余2.5GB") == "剩余二点五GB"


def test_convention_generations_and_zero_led_version_parts():
    """10后 reads its digits as a year does; a version part with a leading zero is digit by digit."""
    assert normalize("10后的孩子") == "一零后的孩子"
    assert normalize("00后员工") == "零零后员工"
    assert normalize("05后") == "零五后"
    assert normalize("版本2026.01已发布") == "版本二零二六点零一已发布"
    assert normalize("HA 2026.01更新") == "HA二零二六点零一更新"
    assert normalize("v1.05已安装") == "v一点零五已安装"
    # Near-misses: a part without a leading zero, and an amount with a unit.
    assert normalize("v2.0.10") == "v二点零点十"
    assert normalize("余额2026.01元") == "余额两千零二十六元零一分"


def test_convention_zero_seconds_and_numbered_lists():
    """":00" seconds are not read; a numbered list item at a line's start reads its number and a pause."""
    assert normalize("12:30:00开会") == "十二点三十分开会"
    assert normalize("08:00:00") == "八点"
    assert normalize("1. 取快递\n2. 交电费") == "一，取快递，二，交电费"
    assert normalize("今日待办：\n1. 取快递\n2. 交电费\n3. 倒垃圾") == "今日待办，一，取快递，二，交电费，三，倒垃圾"
    assert normalize("购物清单\n1) 牛奶\n2) 鸡蛋") == "购物清单，一，牛奶，二，鸡蛋"
    # Near-misses: seconds that are read, a decimal at the start of a line, a number inside a line.
    assert normalize("12:30:05") == "十二点三十分零五秒"
    assert normalize("1.5公里后右转") == "一点五公里后右转"
    assert normalize("提醒\n2.5小时后出发") == "提醒，二点五小时后出发"


def test_convention_about_signs_and_arrows():
    """~ or ≈ before a single value is 约; → reads 到 between words and versions too."""
    assert normalize("≈5kWh") == "约五千瓦时"
    assert normalize("预计~30分钟") == "预计约三十分钟"
    assert normalize("今日用电≈12度") == "今日用电约十二度"
    assert normalize("~¥30") == "约三十元"
    assert normalize("v1.2→v1.3") == "v一点二到v一点三"
    assert normalize("客厅→卧室") == "客厅到卧室"
    # Near-misses: ~ between two values is a range, ≈ between two values 约等于.
    assert normalize("5~8公里") == "五到八公里"
    assert normalize("3天~5天") == "三天到五天"
    assert normalize("1度≈0.5元") == "一度约等于五角"
    assert normalize("9:00→18:00") == "九点到十八点"
    # ... spaced too, as replies write it (气温 5 ~ 13℃ had been 五约十三).
    assert normalize("气温 5 ~ 13℃") == "气温五到十三摄氏度"
    assert normalize("温度 -5 ~ 3℃") == "温度零下五到三摄氏度"
    assert normalize("预计 ~ 10 分钟") == "预计约十分钟"


def test_convention_seats_decimals_before_wan_and_signed_money():
    """A car or seat number keeps 二; 12.8万 reads 点; a minus with a currency sign is 负 on either side of it."""
    assert normalize("2车5F") == "二车五F"
    assert normalize("12车2F靠窗") == "十二车二F靠窗"
    assert normalize("12.8万元") == "十二点八万元"
    assert normalize("全市3.5亿人次") == "全市三点五亿人次"
    assert normalize("退款-¥35.00") == "退款负三十五元"
    assert normalize("余额¥-35") == "余额负三十五元"
    assert normalize("$-5.5") == "负五点五美元"
    # Near-misses: a count of cars, and money without a sign.
    assert normalize("2辆车") == "两辆车"
    assert normalize("¥35.00") == "三十五元"


def test_convention_scores_and_dash_dates():
    """A score after 比分 is a ratio; m-d with a dash and no year is a date when the day is 13–31."""
    assert normalize("比分2:1") == "比分二比一"
    assert normalize("比分 3:2，主队领先") == "比分三比二，主队领先"
    assert normalize("12-25圣诞节") == "十二月二十五日圣诞节"
    assert normalize("5-20出发") == "五月二十日出发"
    assert normalize("12-31前续费") == "十二月三十一日前续费"
    # Near-misses: a clock time, m.d with a dot, small days, and ranges that count or measure.
    assert normalize("14:30出发") == "十四点三十分出发"
    assert normalize("12.25") == "十二点二五"
    assert normalize("1-5号楼") == "一到五号楼"
    assert normalize("等待10-15分钟") == "等待十到十五分钟"
    assert normalize("12-25℃") == "十二到二十五摄氏度"
    assert normalize("第1-15集") == "第一到十五集"
    assert normalize("取件码3-4-1187") == "取件码三四幺幺八七"


def test_slash_between_two_words_is_not_mei_and_temperatures_and_versions_after_names():
    """Bugs: 早/晚高峰 read 早每晚 (a slash reads 每 only after a unit or measure word); GPU-5°C read as a code (a
    minus before a temperature after a name is 零下); iOS 17.10 read 十七点一零 (a spaced version is a version)."""
    assert normalize("早/晚高峰") == "早晚高峰"
    assert normalize("单/双号限行") == "单双号限行"
    assert normalize("是/否开启") == "是否开启"
    assert normalize("GPU-5°C") == "GPU零下五摄氏度"
    assert normalize("CPU -10°C") == "CPU零下十摄氏度"
    assert normalize("iOS 17.10已发布") == "iOS十七点十已发布"
    assert normalize("Python 3.12") == "Python三点十二"
    # Near-misses: rates after a unit or price, codes with a dash, versions joined to the name.
    assert normalize("电价0.5元/度") == "电价五角每度"
    assert normalize("心率72次/分") == "心率七十二次每分"
    assert normalize("¥399/晚") == "三百九十九元每晚"
    assert normalize("显示E-101") == "显示E幺零幺"
    assert normalize("KFR-35GW") == "KFR三五GW"
    assert normalize("iOS17.10") == "iOS十七点十"

def test_convention_units_degrees_dbm_bpm_bar_mah():
    """° alone is 度, °F 华氏度, dBm 分贝毫瓦, bpm 次每分钟, bar 巴, mAh 毫安时 (fourth session, last)."""
    assert normalize("窗帘转角45°") == "窗帘转角四十五度"
    assert normalize("室外98°F") == "室外九十八华氏度"
    assert normalize("信号强度-65dBm") == "信号强度负六十五分贝毫瓦"
    assert normalize("心率72bpm") == "心率七十二次每分钟"
    assert normalize("水压2.5bar") == "水压二点五巴"
    assert normalize("电池5000mAh") == "电池五千毫安时"
    # Near-misses: dB without m, °C, and BPM as a reading's name.
    assert normalize("噪音45dB") == "噪音四十五分贝"
    assert normalize("体温36.5°C") == "体温三十六点五摄氏度"
    assert normalize("BPM 135") == "BPM一百三十五"


def test_convention_signs_on_ranges_and_money_ranges():
    """A minus at the start of a range is its own value's; a currency sign on the first value stands for both."""
    assert normalize("气温-5~3℃") == "气温零下五到三摄氏度"
    assert normalize("-5~-1℃") == "零下五到零下一摄氏度"
    assert normalize("¥50-80") == "五十到八十元"
    assert normalize("人均¥50~80元") == "人均五十到八十元"
    assert normalize("$20-30") == "二十到三十美元"
    assert normalize("¥1,000-2,000") == "一千到两千元"
    assert normalize("¥12.5-15") == "十二元五角到十五元"
    # Near-misses: a single amount, a negative amount, a range whose sign is on both ends.
    assert normalize("¥50") == "五十元"
    assert normalize("-¥35") == "负三十五元"
    assert normalize("¥50-¥80") == "五十到八十元"


def test_convention_signed_changes_and_arrows():
    """+ before a number is 加; - after a comparison 减; ↑ 上升, ↓ 下降."""
    assert normalize("+5%") == "加百分之五"
    assert normalize("较昨日-12%") == "较昨日减百分之十二"
    assert normalize("用电量环比 -3.5%") == "用电量环比减百分之三点五"
    assert normalize("同比 +8%") == "同比加百分之八"
    assert normalize("↑3℃") == "上升三摄氏度"
    assert normalize("湿度↓5%") == "湿度下降百分之五"
    # Near-misses: a temperature, a negative with no comparison, 比较 (no comparison cue), a count's +, +86, maths.
    assert normalize("今日气温-5℃") == "今日气温零下五摄氏度"
    assert normalize("这只股票今天跌了-3.2%") == "这只股票今天跌了负百分之三点二"
    assert normalize("比较冷-5℃") == "比较冷零下五摄氏度"
    assert normalize("你有99+条通知") == "你有九十九加条通知"
    assert normalize("来电：+86 186 1111 2222") == "来电，加八六幺八六幺幺幺幺二二二二"
    assert normalize("1+1=2") == "一加一等于二"


def test_convention_times_and_x():
    """× and x between numbers are 乘 (a resolution's numbers digit by digit); x after a number is 倍."""
    assert normalize("1920×1080") == "一九二零乘一零八零"
    assert normalize("分辨率1280x720") == "分辨率一二八零乘七二零"
    assert normalize("7×24小时") == "七乘二十四小时"
    assert normalize("尺寸120x60cm") == "尺寸一百二十乘六十厘米"
    assert normalize("3×2小时") == "三乘两小时"
    assert normalize("2x4木方") == "二乘四木方"
    assert normalize("1.5x") == "一点五倍"
    assert normalize("2x速度播放") == "两倍速度播放"
    assert normalize("5X光学变焦") == "五倍光学变焦"
    # Near-misses: a hex code, x86, a plate and a model name keep their x.
    assert normalize("0x1F") == "零x一F"
    assert normalize("x86架构") == "x八十六架构"
    assert normalize("川A·9X876") == "川A九X八七六"
    assert normalize("RTX4090x") == "RTX四零九零x"


def test_convention_countdowns_am_pm_and_utc():
    """m:ss after 剩余/还剩/倒计时 is minutes and seconds; AM/PM after a clock time is said before it; UTC+8 加八."""
    assert normalize("剩余 05:30") == "剩余五分三十秒"
    assert normalize("还剩03:15") == "还剩三分十五秒"
    assert normalize("倒计时 10:00") == "倒计时十分"
    assert normalize("倒计时00:45") == "倒计时四十五秒"
    assert normalize("剩余02:02") == "剩余两分两秒"
    assert normalize("8:30 PM") == "晚上八点三十分"
    assert normalize("9:15 AM") == "上午九点十五分"
    assert normalize("9:00 AM-5:00 PM营业") == "上午九点到下午五点营业"
    assert normalize("UTC+8") == "UTC加八"
    assert normalize("UTC-5") == "UTC减五"
    # Written with minutes, an offset is a span of hours and minutes (settled 2026-12-03; it had been GMT加八).
    assert normalize("GMT+08:00") == "GMT加八小时"
    # Near-misses: a clock time without a cue, a day part written already, PM2.5 after a time.
    assert normalize("会议14:30开始") == "会议十四点三十分开始"
    assert normalize("晚上8:00 pm提醒") == "晚上八点提醒"
    assert normalize("8:30 PM2.5为35") == "八点三十分PM二点五为三十五"
    assert normalize("倒计时还剩1分20秒") == "倒计时还剩一分二十秒"


def test_convention_gates_routes_channels_and_basements():
    """Gates, bus routes and Wi-Fi channels are numbers at any length; floors below ground 负."""
    assert normalize("登机口 D108") == "登机口D一百零八"
    assert normalize("请前往D108登机口") == "请前往D一百零八登机口"
    assert normalize("检票口改为B200") == "检票口改为B二百"
    assert normalize("302路公交") == "三百零二路公交"
    assert normalize("信道149") == "信道一百四十九"
    assert normalize("车停在-2层") == "车停在负二层"
    # Near-misses: a flight number before 登机口, a model number with no gate word.
    assert normalize("航班MU2156登机口已变更") == "航班MU二幺五六登机口已变更"
    assert normalize("型号D108") == "型号D幺零八"


def test_convention_foreign_decimals_per_person_and_ordinals():
    """Foreign amounts keep their decimals as written; /人 is 每人; an ordinal keeps 二 before 百/千/万."""
    assert normalize("$4.50") == "四点五零美元"
    assert normalize("$4.50-5.50") == "四点五零到五点五零美元"
    assert normalize("¥68/人") == "六十八元每人"
    assert normalize("自助餐¥128/人") == "自助餐一百二十八元每人"
    assert normalize("第200位") == "第二百位"
    assert normalize("第2000名") == "第二千名"
    # Near-misses: ¥ decimals in 元/角, a count keeps 两.
    assert normalize("¥4.50") == "四元五角"
    assert normalize("200位客人") == "两百位客人"


def test_convention_seats_stock_codes_model_plus_and_codes():
    """Seats drop a leading zero; stock codes digit by digit; + in a model name 加; B2-115 a code."""
    assert normalize("05车03A") == "五车三A"
    assert normalize("02车05F") == "二车五F"
    assert normalize("座位03A") == "座位三A"
    assert normalize("股票600519") == "股票六零零五幺九"
    assert normalize("股票代码：000001") == "股票代码，零零零零零幺"
    assert normalize("贵州茅台（600519）") == "贵州茅台六零零五幺九"
    assert normalize("DS224+") == "DS二二四加"
    assert normalize("DS920+已上线") == "DS九二零加已上线"
    assert normalize("B2-115车位") == "B二幺幺五车位"
    # Near-misses: a room code and a letter code keep their zero; counts after 股票; a bare six-digit amount.
    assert normalize("3号楼05A室") == "三号楼零五A室"
    assert normalize("E05") == "E零五"
    assert normalize("股票100股") == "股票一百股"
    assert normalize("奖金100000元") == "奖金十万元"


def test_convention_list_markers_and_markup():
    """A line's leading -, *, 1), ①, 1️⃣ are list markers (a number read as for 1., then a pause); ** and # are
    decoration."""
    assert normalize("- 取快递\n- 交电费") == "取快递，交电费"
    assert normalize("* 记得带伞") == "记得带伞"
    assert normalize("1) 取快递\n2) 交电费") == "一，取快递，二，交电费"
    assert normalize("① 取快递\n② 交电费") == "一，取快递，二，交电费"
    assert normalize("1️⃣ 取快递\n2️⃣ 交电费") == "一，取快递，二，交电费"
    assert normalize("**重要**：关窗") == "重要，关窗"
    assert normalize("**1.** 取快递") == "一，取快递"
    assert normalize("# 提醒\n明天交电费") == "提醒，明天交电费"
    # Near-misses: a minus at a line's start, a circled number mid-line, # and № as 号.
    assert normalize("-5℃的早晨") == "零下五摄氏度的早晨"
    assert normalize("步骤①完成") == "步骤一完成"
    assert normalize("3#楼") == "三号楼"
    assert normalize("#3") == "三号"


def test_convention_tilde_dash_between_words_and_repeated_marks():
    """~ between two words is 到, — between two dates too; a trailing ~ is decoration; repeated marks read as one."""
    assert normalize("周一~周五营业") == "周一到周五营业"
    assert normalize("上午～下午") == "上午到下午"
    assert normalize("12月1日—12月5日") == "十二月一日到十二月五日"
    assert normalize("1日—5日放假") == "一日到五日放假"
    assert normalize("起床啦～") == "起床啦。"
    assert normalize("晚安~\n明天见") == "晚安，明天见"
    assert normalize("好哒~马上到") == "好哒，马上到"
    assert normalize("太好了!!") == "太好了！"
    assert normalize("真的？！") == "真的？"
    # Near-misses: ~ before a value is 约, between values 到; — between words is a pause.
    assert normalize("~30分钟") == "约三十分钟"
    assert normalize("3天~5天") == "三天到五天"
    assert normalize("提醒——明天交电费") == "提醒，明天交电费"
    assert normalize("周一—周五") == "周一，周五"


def test_convention_short_dash_dates():
    """m-d with a dash and a day under 13 stays a range (its zero dropped) unless a date word follows."""
    assert normalize("12-05") == "十二到五"
    assert normalize("12-05日") == "十二月五日"
    assert normalize("12-05号到期") == "十二月五号到期"
    assert normalize("3-8日出发") == "三月八日出发"
    # Near-misses: a span of days, a range of buildings, an ordinal range, a date with a day over 12, a phone number.
    assert normalize("3-5日内送达") == "三到五日内送达"
    assert normalize("1-5号楼") == "一到五号楼"
    assert normalize("第1-5号") == "第一到五号"
    assert normalize("12-25") == "十二月二十五日"
    assert normalize("电话010-12345678") == "电话零幺零幺二三四五六七八"


def test_convention_countdown_seconds_and_chinese_clock_minutes():
    """Countdowns: ":00" seconds are not read and seconds under 10 drop their zero; 9点05分 reads its zero."""
    assert normalize("倒计时 10:00") == "倒计时十分"
    assert normalize("剩余 05:08") == "剩余五分八秒"
    assert normalize("还剩 1:05:00") == "还剩一小时五分"
    assert normalize("9点05分开会") == "九点零五分开会"
    assert normalize("2点05分") == "两点零五分"
    assert normalize("下午 1 点 05 分") == "下午一点零五分"  # spaced as LLM replies write it (had been 一点五分)
    assert normalize("9点00分") == "九点"
    # Near-misses: a clock time stays one; a minute without its zero, or a count of minutes, has no 零.
    assert normalize("提醒：10:00") == "提醒，十点"
    assert normalize("9点5分") == "九点五分"
    assert normalize("05分钟") == "五分钟"


def test_convention_noon_midnight_time_zones_and_signs():
    """12 PM is 中午, 12 AM 凌晨; a zone's sign is 加/减; a sign before money is 加/减; +3℃ 加, -3℃ 零下."""
    assert normalize("12:15 PM") == "中午十二点十五分"
    assert normalize("12:30 AM") == "凌晨十二点三十分"
    assert normalize("UTC-5") == "UTC减五"
    assert normalize("UTC−5") == "UTC减五"
    assert normalize("+¥356") == "加三百五十六元"
    assert normalize("+HK$50") == "加五十港元"
    assert normalize("+3℃") == "加三摄氏度"
    assert normalize("-3℃") == "零下三摄氏度"
    # Near-misses: other hours keep 上午/下午 (settled 2026-12-06: an evening or a night hour has its own part of the
    # day, below); a day part already written is not said again; UTC+8.
    assert normalize("3:30 PM") == "下午三点三十分"
    assert normalize("9:15 AM") == "上午九点十五分"
    assert normalize("中午12:15 PM") == "中午十二点十五分"
    assert normalize("UTC+8") == "UTC加八"


def test_a_bracketed_heading_is_followed_by_a_pause():
    """【京东】, [报警], 〔通知〕 opening a message or a sentence name its sender or kind: a pause after it (they
    had run into the sentence: 京东验证码, 报警客厅检测到; settled 2026-12-06, 62 set lines)."""
    assert normalize("【京东】验证码：824610，请勿泄露。") == "京东，验证码，八二四六幺零，请勿泄露。"
    assert normalize("[报警] 客厅检测到有人移动。") == "报警，客厅检测到有人移动。"
    assert normalize("〔通知〕明天停水") == "通知，明天停水"
    assert normalize("洗好了。【提醒】请晾晒") == "洗好了。提醒，请晾晒"
    assert normalize("🔔【门铃】\n有人在门口") == "门铃，有人在门口"
    # Near-misses: brackets inside a sentence, a number alone, a heading with nothing after it, a checkbox.
    assert normalize("请打开【设置】页面") == "请打开设置页面"
    assert normalize("【12】号") == "十二号"
    assert normalize("【提醒】") == "提醒"
    assert normalize("- [x] 倒垃圾") == "已完成，倒垃圾"


def test_a_book_number_is_a_code():
    """ISBN, 书号 and ISSN numbers are read digit by digit as other codes are, their dashes unsaid (the groups had been
    a minus and a range: ISBN 九七八负七到一百一十一…)."""
    assert normalize("ISBN 978-7-111-12345-6") == "ISBN九七八七幺幺幺幺二三四五六"
    assert normalize("书号 978-7-5063-9999-1") == "书号九七八七五零六三九九九九幺"
    assert normalize("ISSN 1000-0054") == "ISSN幺零零零零零五四"
    # Near-miss: the letters inside a longer Latin word are no cue.
    assert normalize("MISBN 12") == "MISBN十二"


def test_areas_and_volumes_typed_without_superscripts():
    """m3 and m2 after a number are 立方米 and 平方米, as m³ and m² are (燃气用量 1.2 m3 had been 一点二米三)."""
    assert normalize("燃气用量 1.2 m3。") == "燃气用量一点二立方米。"
    assert normalize("房子 120 m2，三室两厅。") == "房子一百二十平方米，三室两厅。"
    assert normalize("1 m3/h") == "一立方米每小时"
    # Near-misses: a car's and a chip's name in capitals.
    assert normalize("宝马 M3 已停入车库") == "宝马M三已停入车库"
    assert normalize("苹果 M2 芯片") == "苹果M二芯片"


def test_eight_digits_after_a_date_word_are_a_date():
    """生产日期 20261201 is a date as labels and logs write it (it had been read as a code, 二零二六幺二零幺)."""
    assert normalize("生产日期 20261201") == "生产日期二零二六年十二月一日"
    assert normalize("截至 20261206 共 35 单") == "截至二零二六年十二月六日共三十五单"
    assert normalize("生日 19900815") == "生日一九九零年八月十五日"
    # Near-misses: no such month, no date word, more digits than a date has.
    assert normalize("日期 20261340") == "日期二零二六幺三四零"
    assert normalize("订单号 20261201") == "订单号二零二六幺二零幺"
    assert normalize("日期 2026120188") == "日期二零二六幺二零幺八八"


def test_a_spaced_dash_between_a_title_and_its_artist_is_a_pause():
    """What a media player shows as playing, title - artist, has a pause between them also where one is in Latin
    letters or the title in its brackets (《孤勇者》- 陈奕迅 had run together: 孤勇者陈奕迅)."""
    assert normalize("正在播放《孤勇者》- 陈奕迅") == "正在播放孤勇者，陈奕迅"
    assert normalize("「晴天」- 周杰伦") == "晴天，周杰伦"
    assert normalize("正在播放 Shape of You - Ed Sheeran") == "正在播放Shape of You，Ed Sheeran"
    # Near-misses: a range of days, a tight dash between words or in a Latin name, a number after the dash.
    assert normalize("周一 - 周五") == "周一到周五"
    assert normalize("中国-东盟") == "中国东盟"
    assert normalize("Wi-Fi 已连接") == "Wi Fi已连接"
    assert normalize("COVID - 19") == "COVID十九"


def test_evening_and_night_hours_after_am_pm():
    """7 PM to 11:59 PM is the evening (晚上) and 1 AM to 4:59 AM before dawn (凌晨): 下午十一点 and 上午两点 are no
    Chinese reading (settled 2026-12-06; five set lines had written 下午七点 to 下午十一点)."""
    assert normalize("伦敦现在是 11:20 PM。") == "伦敦现在是晚上十一点二十分。"
    assert normalize("会议改到 8pm") == "会议改到晚上八点"
    assert normalize("备份 2:00 AM 开始") == "备份凌晨两点开始"
    assert normalize("7:00-9:30 PM 直播") == "晚上七点到九点三十分直播"
    # Near-misses: 6 PM and 5 AM keep 下午 and 上午; a part of the day already written is said once.
    assert normalize("6:20 PM 落地") == "下午六点二十分落地"
    assert normalize("5:30 AM 起床") == "上午五点三十分起床"
    assert normalize("今晚 10:30 PM 关灯") == "今晚十点三十分关灯"


def test_convention_gates_routes_and_2k():
    """2 before 百/千 in a gate or route is 二; 2K is 二K (4K stays 四K)."""
    assert normalize("登机口 B226") == "登机口B二百二十六"
    assert normalize("209路") == "二百零九路"
    assert normalize("B226号登机口") == "B二百二十六号登机口"
    assert normalize("2K屏幕") == "二K屏幕"
    assert normalize("4K电视") == "四K电视"
    # Near-misses: an amount keeps 两, and a count before a measure word.
    assert normalize("200元") == "两百元"
    assert normalize("2个") == "两个"


def test_convention_screen_ratios_and_blood_pressure():
    """16:9 after 比例/屏幕/画面 or before 的 is 比; blood pressure (mmHg or after 血压) is read with 比."""
    assert normalize("比例16:9") == "比例十六比九"
    assert normalize("屏幕 16:10") == "屏幕十六比十"
    assert normalize("画面21:9") == "画面二十一比九"
    assert normalize("16:9的画面") == "十六比九的画面"
    assert normalize("16∶9") == "十六比九"
    assert normalize("血压偏高 150/100") == "血压偏高一百五十比一百"
    assert normalize("128/82 mmHg") == "一百二十八比八十二毫米汞柱"
    assert normalize("血压128/82") == "血压一百二十八比八十二"
    assert normalize("血压：120/80mmHg") == "血压，一百二十比八十毫米汞柱"
    # Near-misses: h:mm elsewhere is a clock; other slashes stay fractions and dates.
    assert normalize("16:10的会议") == "十六点十分的会议"
    assert normalize("1/5") == "五分之一"
    assert normalize("血压高，1/5的人") == "血压高，五分之一的人"
    assert normalize("5/20") == "五月二十日"
    assert normalize("3/128") == "一百二十八分之三"


def test_convention_seconds_units_and_dollar_prefixes():
    """s after a number is 秒, ms 毫秒; HK$ 港元, US$ 美元, NT$ 新台币."""
    assert normalize("等待30s后重试") == "等待三十秒后重试"
    assert normalize("延迟200ms") == "延迟两百毫秒"
    assert normalize("HK$120") == "一百二十港元"
    assert normalize("US$50") == "五十美元"
    assert normalize("NT$300") == "三百新台币"
    # Near-misses: s in a model name (joined or after a space) and 4s店 are names, not seconds; $ alone is 美元.
    assert normalize("iPhone 6s") == "iPhone六s"
    assert normalize("iPhone6s") == "iPhone六s"
    assert normalize("去4s店保养") == "去四s店保养"
    assert normalize("$50") == "五十美元"
    assert normalize("¥ 120") == "一百二十元"
    assert normalize("拨打120") == "拨打幺二零"


def test_convention_tilde_pause_and_colon_versions():
    """～ after a word mid-sentence or before a line break is a pause, 到 only between days, dates, times or
    values; a year.month.patch after a colon or a version word is a version."""
    assert normalize("早安～今天有雨") == "早安，今天有雨"
    assert normalize("Hi～你好呀") == "Hi，你好呀"  # after a Latin word too (the ～ had left no pause)
    assert normalize("早安～\n今天有雨") == "早安，今天有雨"
    assert normalize("北京～上海") == "北京，上海"
    assert normalize("好的～我这就去办") == "好的，我这就去办"
    assert normalize("可用：2026.12.0") == "可用，二零二六点十二点零"
    assert normalize("固件 2026.12.1") == "固件二零二六点十二点一"
    # Near-misses: days, times and values keep 到; a particle's ~ is a drawn-out tone; a date after a date word
    # or written zero-padded stays a date.
    assert normalize("周一～周五") == "周一到周五"
    assert normalize("明天～后天") == "明天到后天"
    assert normalize("3天~5天") == "三天到五天"
    assert normalize("晚安～") == "晚安。"
    assert normalize("纪念日：2027.05.16") == "纪念日，二零二七年五月十六日"
    assert normalize("日期：2026.12.1") == "日期，二零二六年十二月一日"
    assert normalize("出发：2026.12.05") == "出发，二零二六年十二月五日"


def test_phonemize_is_built_from_pinyin():
    from misaki.zh import ZHG2P

    sentence = "我得还你钱。"
    expected = "".join(ZHG2P.py2ipa(s) for s in pinyin(sentence)).replace(chr(815), "")
    assert phonemize(sentence).replace(" ", "").rstrip(".") == expected
    assert phonemize(sentence).endswith(".")


def test_phonemize_matches_misaki_layout_where_readings_agree():
    from misaki.zh import ZHG2P

    sentence = "欢迎使用语音合成系统。"
    assert phonemize(sentence) == ZHG2P()(sentence)[0].strip()


def test_jieba_global_state_untouched():
    import jieba

    phonemize("重置路由器")
    assert "重置" not in getattr(jieba.dt, "user_word_tag_tab", {})


def test_an_hour_with_am_or_pm_and_no_minutes_is_a_clock_time():
    """3PM, 8 pm, 12 PM read as 8:00 PM does (they had read 三PM); the part of the day is said once."""
    assert normalize("会议 3PM 开始") == "会议下午三点开始"
    assert normalize("8 pm 提醒我") == "晚上八点提醒我"
    assert normalize("12 PM 吃饭") == "中午十二点吃饭"
    assert normalize("明早7AM叫我") == "明早七点叫我"
    assert normalize("今晚 9 pm 关灯") == "今晚九点关灯"
    # Not a particle sensor, a product name's part, a word that starts with the letters, or no hour of twelve.
    assert normalize("PM2.5 35") == "PM二点五，三十五"
    assert normalize("Shelly Plus 1PM 已离线") == "Shelly Plus一PM已离线"
    assert normalize("5 AMD") == "五AMD"
    assert normalize("13PM") == "十三PM"


def test_convention_one_in_a_model_number_is_yao():
    """1 in a model or chip number read digit by digit is 幺, as in codes (settled after announce_holdout7's run)."""
    assert normalize("N5105 小主机") == "N五幺零五小主机"
    assert normalize("芯片 RK3188 过热") == "芯片RK三幺八八过热"
    assert normalize("J1900 主板") == "J幺九零零主板"
    assert normalize("赛扬 J6412") == "赛扬J六四幺二"
    # Near-misses: one or two digits after letters read as a number; a × resolution keeps 一 (1920×1080).
    assert normalize("N95 迷你主机") == "N九十五迷你主机"
    assert normalize("K1 键盘") == "K一键盘"


def test_convention_settled_after_the_seventh_held_out_set():
    """The readings settled on 2026-12-01 for announce_holdout7.tsv's open cases, on sentences outside the sets."""
    # A decimal before ":" and a number is a ratio; a Latin name's digits before a colon are a reading's name.
    assert normalize("按 1.2:1 兑水") == "按一点二比一兑水"
    assert normalize("银幕 1.66:1") == "银幕一点六六比一"
    assert normalize("PM2.5：42μg/m³") == "PM二点五，四十二微克每立方米"
    assert normalize("提醒：9:30") == "提醒，九点三十分"
    # A slash between two readings with their own unit, % or sign is a pause; / before a unit stays 每, and a bare
    # slash pair a fraction or a date.
    assert normalize("书房 21.3℃ / 52%") == "书房二十一点三摄氏度，百分之五十二"
    assert normalize("充电宝 5V/3000mAh") == "充电宝五伏，三千毫安时"
    assert normalize("冷库 -18°C/65%") == "冷库零下十八摄氏度，百分之六十五"
    assert normalize("电价 0.6元/度") == "电价六角每度"
    assert normalize("风速 3m/s") == "风速三米每秒"
    assert normalize("水箱 3/4") == "水箱四分之三"
    assert normalize("6/18 大促") == "六月十八日大促"
    # A year.month.patch after a verb of updating is a version; a decimal after 升到 a reading, a bare one a date.
    assert normalize("固件已升到 2026.3.2") == "固件已升到二零二六点三点二"
    assert normalize("系统升至 2025.11.4") == "系统升至二零二五点十一点四"
    assert normalize("水位升到 1.25 米") == "水位升到一点二五米"
    assert normalize("日期 2026.3.2") == "日期二零二六年三月二日"
    # A 元 price with three or more decimals reads with 点; two decimals keep 元/角/分.
    assert normalize("¥2.345/度") == "二点三四五元每度"
    assert normalize("油价 ¥7.689/升") == "油价七点六八九元每升"
    assert normalize("¥0.5-0.617/度") == "零点五到零点六一七元每度"
    assert normalize("¥2.35") == "两元三角五分"
    assert normalize("¥0.5-0.8") == "五角到八角"
    # A hyphen between two Latin words is a space; a dash next to digits is a code's or a range's, not read.
    assert normalize("Wake-on-LAN 已发送") == "Wake on LAN已发送"
    assert normalize("E-Ink 屏已刷新") == "E Ink屏已刷新"
    assert normalize("空调 KFR-50LW") == "空调KFR五零LW"
    assert normalize("ESP32-S2 离线") == "ESP三二S二离线"
    assert normalize("720P-2K") == "七二零P到二K"
    # After SN the colon is a pause and the serial is digit by digit with 1 as 幺, however it is grouped.
    assert normalize("SN: 5G12B0A3。") == "SN，五G幺二B零A三。"
    assert normalize("S/N：1020-3344") == "SN，幺零二零三三四四"
    assert normalize("SN 12AB34 已登记") == "SN幺二AB三四已登记"
    assert normalize("SNMP 已开启") == "SNMP已开启"
    # Already read as settled: × resolutions with 一, P resolutions with 幺, pickup codes, - before money, 2x, 4K HDR.
    assert normalize("1600×1200") == "一六零零乘一二零零"
    assert normalize("2160p") == "二幺六零p"
    assert normalize("取件码 7-1-1024") == "取件码七幺幺零二四"
    assert normalize("余额 -¥8") == "余额负八元"
    assert normalize("比上周 -¥8") == "比上周减八元"
    assert normalize("2x 广角") == "两倍广角"
    assert normalize("8K HDR10") == "八K HDR十"
    assert normalize("照度 650 lux，水杯 0.5L") == "照度六百五十勒克斯，水杯零点五升"


def test_two_latin_words_of_one_name_are_said_as_it():
    """Wi-Fi is written Wi Fi in the spoken form and still said "wai fai"; other runs are said word by word."""
    assert latin.words("Wi Fi") == [phonemes("Wi-Fi")] == [phonemes("WiFi")]
    assert latin.words("Home Assistant") == [phonemes("Home"), phonemes("Assistant")]
    assert latin.words("Type C") == [phonemes("Type"), phonemes("C")] == phonemes("Type-C").split(" ", 1)
    assert phonemize("Wi-Fi已连接") == phonemize("WiFi已连接")
    assert phonemize("访客 Wi-Fi 6 已开启").startswith(phonemize("访客").rstrip(".") + " " + phonemes("WiFi"))


def test_addresses_and_standards_are_said_as_typed() -> None:
    """Web and e-mail addresses, file names and standards' numbers (settled 2026-12-05, tests/unit/text/README.md):
    every symbol said by its name, digits as a code, letters as words; no dot becomes a sentence's end and nothing
    the user typed is dropped (the @ and _ had vanished, a host's dots had split the sentence)."""
    assert normalize("请访问 www.example.com 查看详情") == "请访问www点example点com查看详情"
    assert normalize("打开 http://homeassistant.local:8123/lovelace/0 登录") == (
        "打开http冒号双斜杠homeassistant点local冒号八幺二三斜杠lovelace斜杠零登录")
    assert normalize("详见 https://www.home-assistant.io/integrations/wyoming/。") == (
        "详见https冒号双斜杠www点home杠assistant点io斜杠integrations斜杠wyoming斜杠。")
    assert normalize("报告已发送到 user_01@qq.com。") == "报告已发送到user下划线零幺艾特qq点com。"
    # & inside an address is one of its symbols: the address goes on after it, its digits still a code.
    assert normalize("调用 http://ha.local:8123/api?a=1&b=1 试试") == (
        "调用http冒号双斜杠ha点local冒号八幺二三斜杠api问号a等于幺和b等于幺试试")
    assert normalize("请检查 configuration.yaml 文件") == "请检查configuration点yaml文件"
    assert normalize("照片 IMG_2031.JPG 已备份") == "照片IMG下划线二零三幺点JPG已备份"
    assert normalize("网关 http://192.168.1.1 无响应") == "网关http冒号双斜杠幺九二点幺六八点幺点幺无响应"
    assert normalize("符合GB 18030-2022标准") == "符合GB幺八零三零杠二零二二标准"
    assert normalize("执行GB/T 15834—2011") == "执行GB T幺五八三四杠二零一一"
    assert normalize("路由器支持IEEE 802.11ax") == "路由器支持IEEE八零二点幺幺ax"
    # Near-misses: a version, a decimal, an entity id and a sentence that ends on a Latin word keep their readings.
    assert normalize("已升级到v3.2.1") == "已升级到v三点二点一"
    assert normalize("温度23.5℃。") == "温度二十三点五摄氏度。"
    assert normalize("switch.garage_door 已关闭") == "switch点garage door已关闭"
    assert normalize("已连接Wi-Fi. 信号良好") == "已连接Wi Fi。信号良好"


def test_symbols_that_carry_a_meaning_are_said_not_dropped() -> None:
    """& had vanished (张三&李四 → 张三李四), a vulgar fraction was read as its digits after NFKC (¼ → 一四,
    2½ → 二十一两) and a Roman numeral spelled as Latin letters (Ⅲ期 → I I I期)."""
    assert normalize("张三&李四已到家") == "张三和李四已到家"
    assert normalize("加入¼杯牛奶") == "加入四分之一杯牛奶"
    assert normalize("还需要2½小时") == "还需要二又二分之一小时"
    assert normalize("临床Ⅲ期") == "临床三期"
    assert normalize("第Ⅱ代传感器") == "第二代传感器"
    # Greek letters, components' units, powers, roots and currencies that had been dropped (一百F, 二十 for 2^10).
    assert normalize("β版固件") == "贝塔版固件"
    assert normalize("温差Δ5℃") == "温差德尔塔五摄氏度"
    assert normalize("换一个100μF的电容和4.7kΩ电阻") == "换一个一百微法的电容和四点七千欧电阻"
    assert normalize("共2^10种组合") == "共二的十次方种组合"
    assert normalize("约10⁶次") == "约十的六次方次"
    assert normalize("√2约等于1.414") == "根号二约等于一点四一四"
    assert normalize("机票₩350000") == "机票三十五万韩元"


def test_html_in_a_reply_is_markup_and_comparisons_between_words_are_said() -> None:
    """An LLM's HTML had its tag names read as words (<b>注意</b> → b注意b), and < > between words vanished
    (x<y → x y)."""
    assert normalize("<b>注意</b>今天下雨") == "注意今天下雨"
    assert normalize("第一行<br>第二行<BR />第三行") == "第一行，第二行，第三行"
    assert normalize("<p>门已锁好</p><p>灯已关闭</p>") == "门已锁好，灯已关闭"
    assert normalize('<span style="color:red">警告</span>：<a href="http://nas.local/a?b=1">查看</a>') == "警告，查看"
    assert normalize("<提示>门没关") == "提示门没关"  # not an HTML tag: the word stays
    assert normalize("如果x<y就报警") == "如果x小于y就报警"
    assert normalize("A > B") == "A大于B"
    assert normalize("if a<b and c>d") == "if a小于b and c大于d"  # a<b ... c>d is no tag
    # character references are the characters they stand for (their names had been read: 温度和nbsp，…)
    assert normalize("温度&nbsp;25&#8451;，张三&amp;李四") == "温度二十五摄氏度，张三和李四"
    assert normalize("&lt;b&gt;注意&lt;/b&gt;：5 &lt; 10") == "注意，五小于十"


def test_markdown_links_task_boxes_and_fences_are_said_as_a_reader_shows_them() -> None:
    """A link's target had been read after its text, a done task's x read as a letter, a fence's language said."""
    assert normalize("详见[设置页面](http://ha.local:8123/config)。") == "详见设置页面。"
    assert normalize('![客厅截图](snap.png) [链接](https://a.cn "标题")') == "客厅截图链接"
    assert normalize("- [ ] 买菜\n- [x] 洗衣服") == "买菜，已完成，洗衣服"
    assert normalize("参见[^1]。") == "参见。"
    assert normalize("```yaml\nlight: on\n```\n好了") == "light，on，好了"
    assert normalize("访问 https://a.cn/x 查看") == "访问https冒号双斜杠a点cn斜杠x查看"  # a bare address is said


def test_currency_codes_ratings_and_dashed_scores_are_read_as_said() -> None:
    """USD 1000 had its digits read one by one as a model number's (USD幺零零零), a rating's slash was dropped
    (4.8/5 → 四点八五, another number), and a score with a dash was a range (比分3-2 → 三到二)."""
    assert normalize("账户余额 USD 1,000") == "账户余额一千美元"
    assert normalize("退款 300 HKD，另付 EUR 12.5") == "退款三百港元，另付十二点五欧元"
    assert normalize("CNY 12.50") == "十二元五角"
    assert normalize("-USD 5，USD -5") == "负五美元，负五美元"  # a minus either side of the code is kept
    assert normalize("RTX 4090显卡") == "RTX四零九零显卡"  # a model number stays one
    assert normalize("评分4.8/5") == "评分五分之四点八"
    assert normalize("还剩1/2.") == "还剩二分之一。"
    assert normalize("比分3-2，主队获胜") == "比分三比二，主队获胜"
    assert normalize("双方打成1-1平") == "双方打成一比一平"
    assert normalize("以3-5天为宜") == "以三到五天为宜"  # after 以 a dash is a range
    # A word after the pair that wins, loses or leads makes it a score too: a range is never won.
    assert normalize("主队以3-1获胜") == "主队以三比一获胜"
    assert normalize("国足0-2不敌日本") == "国足零比二不敌日本"
    assert normalize("湖人 102-98 击败勇士") == "湖人一百零二比九十八击败勇士"
    assert normalize("3-5天后领先") == "三到五天后领先"  # the pair's own word (天) comes first: a range
    # Between two names, a falling pair no date can be is a score; one a date can be, or one with its word, is not.
    assert normalize("湖人112-108勇士") == "湖人一百一十二比一百零八勇士"
    assert normalize("巴萨3-0皇马") == "巴萨三比零皇马"
    assert normalize("温度25-18度") == "温度二十五到十八度"
    assert normalize("预计10-1放假") == "预计十到一放假"


def test_festivals_named_by_their_dates_and_round_the_clock_are_said_by_name() -> None:
    """5.1假期 had been 五点一假期 (a decimal), 618大促 六百一十八大促, 24/7 a fraction (七分之二十四)."""
    assert normalize("5.1假期安排已更新") == "五一假期安排已更新"
    assert normalize("10.1国庆出行提醒") == "十一国庆出行提醒"
    assert normalize("3.15晚会曝光") == "三一五晚会曝光"
    assert normalize("618大促和11.11购物节") == "六一八大促和双十一购物节"
    assert normalize("客服24/7在线") == "客服二十四乘七在线"
    assert normalize("温度1.5度") == "温度一点五度"  # no festival after it: a decimal


def test_dates_and_ordinals_as_english_sources_write_them() -> None:
    """Dec 6 had been Dec六, 06/12/2026 three numbers (零六十二两千零二十六), 2nd 二nd."""
    assert normalize("Your package arrives Dec 6") == "Your package arrives十二月六日"
    assert normalize("截止 December 31, 2026") == "截止二零二六年十二月三十一日"
    assert normalize("6 Dec 2026 到期") == "二零二六年十二月六日到期"
    assert normalize("截止 12/31/2026 前") == "截止二零二六年十二月三十一日前"  # / month first, as in the US
    assert normalize("06.12.2026 起") == "二零二六年十二月六日起"  # . day first, as in Europe
    assert normalize("取件码8-3-2016。") == "取件码八三二零幺六。"  # dashed groups stay a code
    assert normalize("获得2nd place") == "获得第二place"
    assert normalize("第1st") == "第一"


def test_sensor_readings_keep_their_names_apart_and_devices_their_addresses() -> None:
    """PM2.5 12 had been heard as 二点五十二, a MAC address as clock times (零比一A，…), a lone @ dropped."""
    assert normalize("PM2.5 12 μg/m³") == "PM二点五，十二微克每立方米"
    assert normalize("CO2 800ppm") == "CO二，八百ppm"
    assert normalize("MAC 00:1A:2B:3C:4D:5E") == "MAC零零冒号幺A冒号二B冒号三C冒号四D冒号五E"
    assert normalize("检测到运动 @ 车库") == "检测到运动在车库"
    assert normalize("user@qq.com") == "user艾特qq点com"  # inside an address @ is named


def test_sensor_and_assistant_texts_read_as_said() -> None:
    """Found probing announcement and reply texts (2026-12-05): each had been misread as its comment says."""
    # An assistant's inline list and a timer's whole minutes (had been 一客厅灯二卧室灯 and 二十五比零).
    assert normalize("找到 2 个：①客厅灯 ②卧室灯") == "找到两个，一，客厅灯，二，卧室灯"
    assert normalize("番茄钟 25:00 后提醒，比分 3:1") == "番茄钟二十五分后提醒，比分三比一"
    # A zero-padded m/d is a date, as no fraction is written so (had been 八分之十二); 1/5 stays a fraction.
    assert normalize("快递预计 12/08 送达，约占 1/5") == "快递预计十二月八日送达，约占五分之一"
    # Sleep and timers in letter units: m after hours or before seconds is minutes (had been 米).
    assert normalize("睡眠 7h 32m，深睡 1h 0m，计时 3m 20s") == "睡眠七小时三十二分钟，深睡一小时，计时三分二十秒"
    assert normalize("窗高 3m，还剩 1h 25min") == "窗高三米，还剩一小时二十五分钟"
    # Food energy from a fitness or scale integration: had been letters, and Kcal read its number digit by digit.
    assert normalize("今日消耗 456 kcal，早餐 1 Kcal") == "今日消耗四百五十六大卡，早餐一大卡"
    # Floors as malls and lifts write them (had been 一F); a seat's 12F and a Fahrenheit reading are not floors.
    assert normalize("电梯到 1F大厅，停车场 2F") == "电梯到一楼大厅，停车场二楼"
    assert normalize("室温 72F，座位 12F") == "室温七十二华氏度，座位十二F"
    assert normalize("室温正常? 1F大厅") == "室温正常？一楼大厅"
    # × before a lone number had been dropped (鸡蛋二); a model's X stays.
    assert normalize("购物清单：鸡蛋×2，宝马X5") == "购物清单，鸡蛋乘二，宝马X五"
    # Spans as apps abbreviate them in English (had been letters), and VS without its dot (had been letters).
    assert normalize("ETA 5 mins，还剩 30 secs，共 2 hrs") == "ETA五分钟，还剩三十秒，共两小时"
    assert normalize("湖人VS勇士，3 vs 2，打开 VS Code") == "湖人对勇士，三对二，打开VS Code"
    # A short list inside a line, as assistants write it (had run together, and 2. had ended a sentence); a lone
    # number before a full stop is no list.
    assert normalize("结果：1) 客厅 2) 卧室") == "结果，一，客厅，二，卧室"
    assert normalize("1. 09:30 会议 2. 10:00 电话") == "一，九点三十分会议，二，十点电话"
    assert normalize("温度 25. 湿度 40.") == "温度二十五。湿度四十。"
    # A top-heavy m/d is a date (had been 八分之十二), unless a ratio cue comes before it.
    assert normalize("3 天后（12/8）是你的生日，比例 3/2") == "三天后，十二月八日，是你的生日，比例二分之三"
    # An ISO timestamp: its T had been read, its offset taken for a clock time (八点).
    assert normalize("更新于 2026-12-05T08:05:00+08:00") == "更新于二零二六年十二月五日八点零五分UTC加八小时"
    assert normalize("2026-12-05T13:30:00.5Z") == "二零二六年十二月五日十三点三十分UTC"
    # A model's number and a reading after it are two numbers (had run together: 三零六零十二GB); a number's spaced
    # groups after a Latin word stay one number.
    assert normalize("RTX 3060 12GB，Tel 138 2046 7719") == "RTX三零六零，十二GB，Tel幺三八二零四六七七幺九"
    assert normalize("小米 13 256GB，电话 138 2046 7719") == "小米十三，两百五十六GB，电话幺三八二零四六七七幺九"


def test_latin_abbreviations_are_not_sentence_stops() -> None:
    """An abbreviation's dot had been a full stop inside the sentence (vs。去年, e。g。), a.m. left as letters."""
    assert normalize("vs. 去年同期") == "对去年同期"
    assert normalize("家电 e.g. 空调、冰箱 etc.") == "家电例如空调，冰箱等等"
    assert normalize("Mr. Wang 到了，Dr.Li 也到了") == "Mr Wang到了，Dr Li也到了"
    assert normalize("明天 8 a.m. 开会，5 p.m. 结束") == "明天上午八点开会，下午五点结束"
    assert normalize("Apple Inc. 发布了新品") == "Apple Inc发布了新品" and normalize("U.S. 大选") == "US大选"


def test_numbers_past_counting_and_an_id_numbers_check_letter() -> None:
    """17 digits and more before a measure word had raised IndexError (past 万亿, cardinal had no unit); an ID's
    check letter X after its cue had been 倍."""
    assert normalize("一共 123456789012345678 个") == "一共一二三四五六七八九零一二三四五六七八个"
    assert normalize("9999999999999999 个").startswith("九千九百九十九万亿")  # the largest still counted
    assert normalize("身份证号 11010519491231002X") == "身份证号幺幺零幺零五幺九四九幺二三幺零零二X"
    assert normalize("身份证后四位 002x") == "身份证后四位零零二X"
    assert normalize("放大 2x") == "放大两倍"


def test_menu_paths_pause_and_a_plus_between_words_is_said() -> None:
    """设置 > 网络 > Wi-Fi had run together (设置网络Wi Fi); Ctrl+C and 牛奶+面包 had lost their +."""
    assert normalize("设置 > 网络 > Wi-Fi") == "设置，网络，Wi Fi"
    assert normalize("a > b") == "a大于b" and normalize("温度 > 30℃") == "温度大于三十摄氏度"  # comparisons still
    assert normalize("按 Ctrl+C 复制") == "按Ctrl加C复制" and normalize("Alt + F4") == "Alt加F四"
    assert normalize("牛奶+面包") == "牛奶加面包"
    assert normalize("Disney+ 会员") == "Disney会员" and normalize("A+ 级") == "A级"  # a name's own +


def test_neighbouring_numbers_joined_by_a_list_mark_are_an_estimate() -> None:
    """3、4 个人 is 三四个人 as written in characters (had been 三，四个人); 第 1、2 名 had read its 2 as 两."""
    assert normalize("3、4 个人") == "三四个人" and normalize("1、2 天") == "一两天"
    assert normalize("7、8 岁") == "七八岁"
    assert normalize("第 1、2 名") == "第一，第二名" and normalize("第3、4、5章") == "第三，第四，第五章"
    # Near misses: a list, a countdown, numbers that name (lines, floors), numbers that are not neighbours.
    assert normalize("1、2 号线") == "一，二号线" and normalize("3、4 楼") == "三，四楼"
    assert normalize("倒计时：3、2、1！") == "倒计时，三，二，一！" and normalize("1、2、3") == "一，二，三"
    assert normalize("信道建议设为 1、6 或 11") == "信道建议设为一，六或十一"


def test_a_rating_in_full_and_empty_stars_is_said() -> None:
    """★★★★☆ had said nothing; stars of one kind around a title and stars beside the number stay unsaid (sets)."""
    assert normalize("评价：★★★★☆") == "评价，四星" and normalize("★☆☆☆☆") == "一星"
    assert normalize("评分 ★★★★☆ 4.5 分") == "评分，四点五分"
    assert normalize("★★★ 重要 ★★★") == "重要" and normalize("☆☆ 特别提醒 ☆☆") == "特别提醒"
    assert normalize("★☆ ###") == ""  # a pair is no rating: nothing to say (the server answers with silence)


def test_a_negative_zero_is_zero() -> None:
    """A sensor that rounds a small negative writes -0.0; 零下零点零 says a minus nobody hears in the value."""
    assert normalize("室外温度 -0.0 ℃") == "室外温度零点零摄氏度"
    assert normalize("-0 度") == "零度"
    assert normalize("温度 -0.5℃") == "温度零下零点五摄氏度"  # not zero: the minus stays


def test_am_pm_after_a_range_and_years_beside_a_quarter() -> None:
    """8:00-8:30 AM had said 上午 only for the second time; 2026Q4 and Q4 2026 counted the year (两千零二十六)."""
    assert normalize("8:00-8:30 AM") == "上午八点到八点三十分"
    assert normalize("晚上 8:00-9:00 PM") == "晚上八点到九点"  # the day's part already said: once
    assert normalize("11:00-1:00 PM") == "十一点到下午一点"  # the first is not in the afternoon
    assert normalize("9:00 AM-5:00 PM") == "上午九点到下午五点"
    assert normalize("2026Q4 营收") == normalize("Q4 2026 营收") == "二零二六年Q四营收"
    assert normalize("H1 2026 财报") == "二零二六年H一财报"
    assert normalize("H2 2000 米") == "H二，两千米"  # a number that measures is no year
    assert normalize("正在播放 Vol. 2") == "正在播放Vol二"  # ... but a digit right after the dot: Vol.5 → Vol点五
    # As sports and product replies write it, and capitalised at a sentence's start (VS。 had cut the sentence).
    assert normalize("湖人VS.勇士 今晚开赛") == "湖人对勇士今晚开赛"
    assert normalize("Vs. 去年同期，E.g. 空调") == "对去年同期，例如空调"


def test_dashes_between_values_with_their_words_and_slashes_before_a_named_reading() -> None:
    """A dash between two values that each carry their word read the second as negative (3天-5天 → 三天负五天,
    1月-3月 → 一月负三月), one between two day words was dropped (周一-周五 → 周一周五), and a slash before a reading's
    name ran the two readings together (12.3℃ / 湿度 80% → 十二点三摄氏度湿度百分之八十), as one between words did."""
    assert normalize("预计3天-5天送达") == "预计三天到五天送达"
    assert normalize("1月-3月") == "一月到三月"
    assert normalize("2小时-3小时") == "两小时到三小时"
    assert normalize("3F-5F 正在装修") == "三楼到五楼正在装修"
    assert normalize("周一-周五营业") == "周一到周五营业"
    assert normalize("中国-东盟博览会") == "中国东盟博览会"  # not days: the dash joins, unsaid
    assert normalize("室外 12.3℃ / 湿度 80%") == "室外十二点三摄氏度，湿度百分之八十"
    assert normalize("电池 3.7V/电量 80%") == "电池三点七伏，电量百分之八十"
    assert normalize("10元/公斤 20元") == "十元每公斤二十元"  # a measure word after the slash: 每
    # A space before the next reading's name in a status line is a pause too; not before a word that carries on.
    assert normalize("温度 22.5℃ 湿度 45%") == "温度二十二点五摄氏度，湿度百分之四十五"
    assert normalize("功率 1200W 电流 5.2A") == "功率一千二百瓦，电流五点二安"
    assert normalize("气温 -9℃ 到 -2℃") == "气温零下九摄氏度到零下二摄氏度"
    assert normalize("加热到 60℃ 还需要 25 分钟") == "加热到六十摄氏度还需要二十五分钟"
    # A number and a word unit ends a reading there as a unit does (status_units: had been 二十五度湿度).
    assert normalize("温度 25度 湿度 40%") == "温度二十五度，湿度百分之四十"
    assert normalize("客厅 25 度 卧室 23 度") == "客厅二十五度，卧室二十三度"
    assert normalize("步数 6000步 消耗 300千卡") == "步数六千步，消耗三百千卡"
    assert normalize("加热到 60度 还需要 25 分钟") == "加热到六十度还需要二十五分钟"
    # Set apart by spaces between words, a slash separates a list's items (a status line: mode / setpoint / fan).
    assert normalize("主卧空调：制冷 / 26℃ / 自动风") == "主卧空调，制冷，二十六摄氏度，自动风"
    assert normalize("0.6 元 / 度") == "六角每度"


def test_shorthand_thousands_and_programs_named_with_marks() -> None:
    """¥1.2w was read 一元两角w (a ten-thousandth of the amount), 月薪 15k 十五k, ¥5千 五元千; C++ and C# lost their
    marks (学习C编程), 3万+ its plus, and blood sugar's units were read as letters."""
    assert normalize("¥1.2w") == "一点二万元"
    assert normalize("月薪 15k-20k") == "月薪一万五千到两万"
    assert normalize("预算 5k-8k") == "预算五千到八千"
    assert normalize("3w块") == "三万块"
    assert normalize("销售额为 ¥1.2M") == "销售额为一百二十万元"  # millions and billions after a currency sign
    assert normalize("融资 $3.5B") == "融资三十五亿美元" and normalize("$5M-10M") == "五百万到一千万美元"
    assert normalize("$5 MB") == "五美元MB"
    assert normalize("¥5千-8千") == "五千到八千元"
    assert normalize("¥5千-1万") == "五千到一万元"
    assert normalize("65W快充") == "六十五瓦快充"  # no money word: W is watts
    assert normalize("学习C++编程") == "学习C加加编程"
    assert normalize("C#") == "C sharp"
    assert normalize("粉丝 3万+") == "粉丝三万加"  # as 99+ 条 → 九十九加条
    assert normalize("血糖 5.6 mmol/L，101 mg/dL") == "血糖五点六毫摩尔每升，一百零一毫克每分升"  # were letters


def test_character_zero_keyboard_times_and_clock_ranges_across_day_words() -> None:
    """二〇二六年 lost its 〇 (二二六年), 7*24 its sign (七二十四), and a dash from a clock time to one after a day word
    was dropped (上午十点下午两点)."""
    assert normalize("二〇二六年") == "二零二六年"
    assert normalize("7*24 小时在线") == "七乘二十四小时在线"
    assert normalize("**注意**：门未锁") == "注意，门未锁"  # Markdown's stars are no times sign
    assert normalize("上午10:00-下午2:00") == "上午十点到下午两点"
    assert normalize("周六 22:30 - 周日 08:00 免打扰") == "周六二十二点三十分到周日八点免打扰"


def test_sensor_marks_that_had_been_dropped_are_said() -> None:
    """An uptime's days (3d 4h → 三d四小时), a count's + after a unit (10 km+), an arrow after a reading (1013 hPa ↓),
    mg/m3 without its superscript, lines joined by slashes (换乘 1/2/8 号线 → 一二八号线) and a step of several
    (第2/5步 → 第五分之二步) had been dropped or misread."""
    assert normalize("已运行 3d 4h 12m") == "已运行三天四小时十二分钟"
    assert normalize("能见度 10 km+") == "能见度十公里加"
    assert normalize("气压 1013 hPa ↓") == "气压一千零一十三百帕，下降"
    assert normalize("价格↑") == "价格上升"
    assert normalize("气压下降↓") == "气压下降"  # said once
    assert normalize("甲醛 0.08mg/m3") == "甲醛零点零八毫克每立方米"
    assert normalize("换乘 1/2/8 号线") == "换乘一，二，八号线"
    assert normalize("第 2/5 步") == "第二步，共五步"
    assert normalize("正在播放第 3/10 首") == "正在播放第三首，共十首"  # a playlist counts songs through
    assert normalize("进度 3/10") == "进度十分之三"  # no 第: a fraction still
    assert normalize("经纬度 31.23°N, 121.47°E") == "经纬度北纬三十一点二三度，东经一百二十一点四七度"
    assert normalize("您的订单 #20261205-0012 已发货") == "您的订单二零二六幺二零五零零幺二已发货"  # no 负
    assert normalize("#1 卧室") == "一号卧室"


def test_primes_are_minutes_and_seconds_and_spaced_two_digit_numbers_a_list() -> None:
    """A prime after a number had been dropped (用时 15'30" → 十五三十, 第90'进球 → 第九十进球), also in a coordinate
    (39°54'27"N → 三十九度五十四二十七N); numbers set apart by spaces had run together, lottery numbers as one code
    (开奖号码 03 15 22 → 零三幺五二二)."""
    assert normalize("用时 15'30\"") == "用时十五分三十秒"
    assert normalize("配速 5′30″") == "配速五分三十秒"
    assert normalize("第90'进球") == "第九十分钟进球"
    assert normalize("比赛第 45’ 进球") == "比赛第四十五分钟进球"
    assert normalize("坐标 39°54'27\"N, 116°23'17\"E") == ("坐标北纬三十九度五十四分二十七秒，"
                                                           "东经一百一十六度二十三分十七秒")
    assert normalize("位置：31°14'N") == "位置，北纬三十一度十四分"
    assert normalize("角度 30°15'") == "角度三十度十五分"
    assert normalize("开奖号码 03 15 22 28 33 蓝球 09") == "开奖号码零三，一五，二二，二八，三三，蓝球零九"
    assert normalize("未来三天温度 22 23 24 度") == "未来三天温度二十二，二十三，二十四度"  # not padded: numbers
    # After a code's cue word spaced groups are the code, as 验证码 123 456 is (the cue had taken only the first:
    # 号码幺二，三十四，五十六); a draw's unpadded numbers stay numbers (开奖号码 12 had read as a code).
    assert normalize("验证码 12 34 56") == "验证码幺二三四五六"
    assert normalize("我的号码是 12 34 56，请记住") == "我的号码是幺二三四五六，请记住"
    assert normalize("开奖号码 12 15 22 28 33") == "开奖号码十二，十五，二十二，二十八，三十三"
    assert normalize("验证码 03 15 22") == "验证码零三，一五，二二"
    assert normalize("湿度 45 50 55%") == "湿度四十五，五十，百分之五十五"
    # Near-misses: quotes around a number, a word's quotes, three groups that are a phone number's.
    assert normalize("回复'1'确认") == "回复一确认"
    assert normalize("他说‘还剩3’，好的") == "他说还剩三，好的"
    assert normalize("他说'好的'") == "他说好的"
    assert normalize("电话 138 2046 7719") == "电话幺三八二零四六七七幺九"


def test_values_as_home_assistant_templates_print_them() -> None:
    """A state's last_changed (microseconds read as digits, its offset as 加零点), a timedelta (一day，两点零三分…), a
    state with no value (unavailable ℃ → unavailable C), a speed test's arrows and a wind's compass point as a
    template puts them into a Chinese sentence."""
    assert normalize("上次开门 2026-12-06 07:51:02.123456+00:00") == "上次开门二零二六年十二月六日七点五十一分零二秒UTC"
    assert normalize("已运行 1 day, 2:03:04") == "已运行一天两小时三分四秒"
    assert normalize("已运行 3 days, 4:05:06.123456") == "已运行三天四小时五分六秒"
    assert normalize("客厅温度 unavailable ℃，湿度 45%") == "客厅温度不可用，湿度百分之四十五"
    assert normalize("电量 unknown %") == "电量未知"
    assert normalize("客厅湿度：N/A") == "客厅湿度，不可用"  # a card's N/A (had been N A)
    assert normalize("温度 n/a ℃") == "温度不可用"
    assert normalize("N/A for this device") == "N A for this device"
    # Near-misses: a time range after a date (no offset), an English sentence, a date and a clock without seconds.
    assert normalize("2026-12-05 21:30-22:00 会议") == "二零二六年十二月五日二十一点三十分到二十二点会议"
    assert normalize("The state is unknown") == "The state is unknown"
    assert normalize("设备 unknown error") == "设备unknown error"
    # A speed test's arrows before transfer rates are download and upload (had been 下降 / 上升), said once.
    assert normalize("网速 ↓ 12.3 Mbps ↑ 3.4 Mbps") == "网速下载十二点三兆比特每秒，上传三点四兆比特每秒"
    assert normalize("下载速度 ↓95.2Mbps") == "下载速度九十五点二兆比特每秒"
    assert normalize("股价 ↓ 5%") == "股价下降百分之五"  # no rate: a change, as before
    # A weather integration's compass point after 风向 (had been spelled, N W), its bearing after it.
    assert normalize("风向 NW，风速 3 m/s") == "风向西北，风速三米每秒"
    assert normalize("今天风向 E 风力 3 级") == "今天风向东，风力三级"
    assert normalize("风向 Nest") == "风向Nest"  # a word, no point
    assert normalize("风向 N/A") == "风向不可用"  # no value, not the point N
    assert normalize("上次 2026-12-06 07:51") == "上次二零二六年十二月六日七点五十一分"


def test_markdown_tables_struck_text_and_lettered_choices_in_a_reply() -> None:
    """An LLM's table ran its cells together (九点例会) and said nothing of its rule line only by luck, struck-out text
    read its marks as 约, and a lettered choice's dot was a full stop (A。是B。否)."""
    table = "| 时间 | 事件 |\n|---|---|\n| 9:00 | 例会 |\n| 14:30 | 面试 |"
    assert normalize(table) == "时间，事件，九点，例会，十四点三十分，面试"
    assert normalize("温度：~~25℃~~ 26℃") == "温度，二十五摄氏度，二十六摄氏度"
    assert normalize("请选择：A. 开灯 B. 关灯 C. 取消") == "请选择，A，开灯，B，关灯，C，取消"
    assert normalize("Mr. Wang 来了") == "Mr Wang来了"  # a title's dot is no choice


def test_todays_rules_leave_their_near_misses_alone() -> None:
    """A review of the rules above found these read wrongly by them: a label and a day (还款日 - 今天 → 到), a
    schedule's clock and its item (09:00-站会), a fraction before 路程, a pay word before watts or a 4K screen, an
    arrow after its own word, a wind's bearing, a chat's tildes, a vitamin's letter and a sum."""
    assert normalize("信用卡还款日 - 今天") == "信用卡还款日，今天"
    assert normalize("正在播放：五月天 - 后来的我们") == "正在播放，五月天，后来的我们"
    assert normalize("今日安排 09:00-站会 10:30-评审") == "今日安排九点站会十点三十分评审"
    assert normalize("12:00-次日凌晨2:00") == "十二点到次日凌晨两点"
    assert normalize("已行驶 2/3 路程") == "已行驶三分之二路程"
    assert normalize("乘坐 11/25/42 路") == "乘坐十一，二十五，四十二路"
    assert normalize("第3/4季度营收增长") == "第三，四季度营收增长"
    assert normalize("价格上涨↑") == "价格上涨"
    assert normalize("比特币 ↓ 跌破 6 万美元") == "比特币跌破六万美元"
    assert normalize("电源预算 650W") == "电源预算六百五十瓦"
    assert normalize("预算 4K 显示器") == "预算四K显示器"
    assert normalize("月薪 15-20k") == "月薪一万五千到两万"  # the low end takes the high end's k
    assert normalize("房租 3.5k/月") == "房租三千五百每月"
    assert normalize("门票 120元 / 场") == "门票一百二十元每场"
    assert normalize("北纬39.9°N") == "北纬三十九点九度"
    assert normalize("风向 270°W") == "风向西，两百七十度"  # no coordinate (past 180): a wind's point and bearing
    assert normalize("收到~~我这就去开灯~~") == "收到，我这就去开灯。"
    assert normalize("请多补充维生素 C. 另外要多喝水") == "请多补充维生素C。另外要多喝水"
    assert normalize("请选择 A~C 中的一项") == "请选择A到C中的一项"
    assert normalize("小组前2-3晋级") == "小组前二到三晋级"
    assert normalize("二八定律：20% 的人拥有 80% 的财富") == "二八定律，百分之二十的人拥有百分之八十的财富"
    assert normalize("第3天-第5天") == "第三天到第五天"
    assert normalize("星期天-下午茶") == "星期天下午茶"  # two kinds of day word: no range
    assert normalize("约 1 / 2 杯水") == "约二分之一杯水"  # had been 约一两杯水
    assert normalize("以 6-4、6-3 击败对手") == "以六比四，六比三击败对手"  # each set of a match before the cue
