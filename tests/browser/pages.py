"""What a user does in the Dagster UI, as explicit waits on what the page shows.

Dagster's UI has few ``data-testid``s: the selectors are visible text (button labels, toasts),
aria labels of icons and ``title`` attributes, checked against page-source dumps of Dagster 1.13.27.
Every step waits on an element or a URL (``WebDriverWait``); nothing sleeps.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial
from typing import TypeVar
from urllib.parse import unquote, urlparse

from selenium.common.exceptions import (
    ElementClickInterceptedException,
    NoSuchElementException,
    StaleElementReferenceException,
)
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

TIMEOUT = 60  # a loaded machine renders slowly; a step that never comes fails after this
SIDEBAR_ROW = "//div[contains(@class, 'AssetSidebarNode_itemContainer')]"
GROUP_ICON = ".//*[@aria-label='asset_group']"
# React re-renders replace elements between finding and using them: find again and retry
RETRIED = (NoSuchElementException, StaleElementReferenceException, ElementClickInterceptedException)
T = TypeVar("T")


def wait(driver: WebDriver, timeout: float = TIMEOUT) -> WebDriverWait[WebDriver]:
    return WebDriverWait(driver, timeout, ignored_exceptions=RETRIED)


def until(driver: WebDriver, what: str, condition: Callable[[WebDriver], T]) -> T:
    """``condition`` until truthy; a re-rendered element is found again; the timeout names ``what``."""
    return wait(driver).until(condition, f"waiting {TIMEOUT} s for {what}")


def click(driver: WebDriver, locator: tuple[str, str]) -> None:
    """Click what ``locator`` finds once it is displayed and enabled (found afresh on each try)."""

    def attempt(d: WebDriver) -> bool:
        element = d.find_element(*locator)
        if not (element.is_displayed() and element.is_enabled()):
            return False
        element.click()
        return True

    until(driver, f"{locator[1]} to be clickable", attempt)


def button(label: str, *, starts: bool = False) -> tuple[str, str]:
    """A button by its visible label (``starts``: ``Materialize…`` matches ``Materialize``)."""
    text = f"starts-with(normalize-space(), '{label}')" if starts else f"normalize-space()='{label}'"
    return By.XPATH, f"//button[.//span[{text}]]"


def skip_community_dialog(driver: WebDriver) -> None:
    """Dagster asks a fresh instance once to join its community (a dialog over every page): Skip."""
    click(driver, button("Skip"))
    until(driver, "the community dialog to close", ec.invisibility_of_element_located(button("Skip")))


def lineage_tables(driver: WebDriver) -> dict[str, set[str]]:
    """Open Lineage, unfold every group in the sidebar, select each asset; ``{group: {asset key}}``.

    The sidebar shows only the last part of a key (``orders`` twice), so each asset is selected
    and its full key read from the URL the graph navigates to (``/asset-groups/<key>``).
    """
    click(driver, (By.XPATH, "//a[.//*[normalize-space()='Lineage']]"))
    until(driver, "the Lineage page", ec.url_contains("/asset-groups"))
    for group in _group_names(driver):
        _unfold(driver, group)
    found: dict[str, set[str]] = {}
    group = ""
    for index in range(1, len(driver.find_elements(By.XPATH, SIDEBAR_ROW)) + 1):
        row = f"({SIDEBAR_ROW})[{index}]"  # the tree re-renders on every selection: by position
        name, is_group = until(driver, f"sidebar row {index}", partial(_describe, row=row))
        if is_group:
            group = name
        else:
            found.setdefault(group, set()).add(_select(driver, (By.XPATH, f"{row}//*[@title]")))
    return found


def _describe(driver: WebDriver, row: str) -> tuple[str, bool]:
    """A sidebar row's label and whether it is a group (truthy, for ``until``)."""
    element = driver.find_element(By.XPATH, row)
    return element.find_element(By.XPATH, ".//*[@title]").get_attribute("title") or "", bool(
        element.find_elements(By.XPATH, GROUP_ICON)
    )


def _group_names(driver: WebDriver) -> list[str]:
    groups = (By.XPATH, f"{SIDEBAR_ROW}[{GROUP_ICON}]//*[@title][1]")
    until(driver, "the asset groups in the sidebar", ec.presence_of_element_located(groups))
    return until(driver, "group names", lambda d: [e.get_attribute("title") or "" for e in d.find_elements(*groups)])


def _unfold(driver: WebDriver, group: str) -> None:
    before = len(driver.find_elements(By.XPATH, SIDEBAR_ROW))
    click(driver, (By.XPATH, f"{SIDEBAR_ROW}[.//*[@title='{group}']]/button"))  # the disclosure arrow
    until(driver, f"group {group} to unfold", lambda d: len(d.find_elements(By.XPATH, SIDEBAR_ROW)) > before)


def _select(driver: WebDriver, label: tuple[str, str]) -> str:
    """Click an asset in the sidebar; its key, once the graph shows it (``a/b/c``)."""
    before = driver.current_url
    click(driver, label)
    until(
        driver, "the graph to select the asset", lambda d: d.current_url != before and "/asset-groups/" in d.current_url
    )
    return unquote(urlparse(driver.current_url).path).split("/asset-groups/", 1)[1]


def materialize_unpartitioned(driver: WebDriver, key: str) -> str:
    """Catalog → the asset → Materialize; the id prefix of the run the toast announces."""
    _open_asset(driver, key)
    click(driver, button("Materialize"))
    return _toast_id(driver, "Launched run")


def backfill_range(driver: WebDriver, key: str, first: str, last: str, count: int) -> str:
    """Catalog → the asset → Materialize… → partitions ``first`` to ``last`` (``count``) → Launch backfill; its id."""
    _open_asset(driver, key)
    click(driver, button("Materialize", starts=True))
    # the partition selector: its text box takes the range syntax its placeholder shows
    selector = (By.CSS_SELECTOR, "[role='dialog'] input[placeholder^='ex: ']")
    until(driver, "the partition dialog", ec.element_to_be_clickable(selector))
    driver.find_element(*selector).send_keys(f"[{first}...{last}]", Keys.ENTER)
    dialog = (By.CSS_SELECTOR, "[role='dialog']")
    counted = ec.text_to_be_present_in_element(dialog, f"{count} partitions")
    until(driver, f"the dialog to count {count} partitions", counted)
    click(driver, button("Launch backfill"))
    return _toast_id(driver, "Created backfill")


def _open_asset(driver: WebDriver, key: str) -> None:
    """Catalog (the navigation bar) → the asset's row, named by its whole key (``a / b / c``)."""
    click(driver, (By.XPATH, "//a[normalize-space()='Catalog']"))
    click(driver, (By.CSS_SELECTOR, f"a[href='/assets/{key}']"))
    # the breadcrumbs fold a long key's middle into "…": wait on its last part, as a user reads it
    last = key.rsplit("/", 1)[-1]
    crumb = (By.XPATH, f"//ul[li//*[@title='Assets']]/li[last()]//*[@title='{last}']")
    until(driver, f"the asset page of {key}", ec.presence_of_element_located(crumb))


def _toast_id(driver: WebDriver, announcement: str) -> str:
    """``Launched run <span>4237346d</span>`` → ``4237346d``."""
    toast = (By.XPATH, f"//*[starts-with(text(), '{announcement}')]")
    text = until(driver, f"the toast {announcement!r}", lambda d: d.find_element(*toast).text)
    match = re.search(rf"{announcement}\s+(\S+)", text)
    assert match, f"no id in the toast {text!r}"
    return match.group(1)


def wait_materialized(driver: WebDriver) -> None:
    """The asset page updates live: its "Never materialized" goes once the run's event lands."""
    never = (By.XPATH, "//*[normalize-space()='Never materialized']")
    until(driver, "the asset page to show the materialization", ec.invisibility_of_element_located(never))


def open_partitions(driver: WebDriver, key: str, count: int) -> None:
    """The asset's Partitions tab, once its status filter reads ``Materialized (count)``."""
    _open_asset(driver, key)
    click(driver, (By.XPATH, "//a[@role='tab'][normalize-space()='Partitions']"))
    materialized = (By.XPATH, f"//*[normalize-space()='Materialized ({count})']")
    until(driver, f"the Partitions tab to count {count} materialized", ec.visibility_of_element_located(materialized))


def partition_metadata(driver: WebDriver, partition: str, keys: tuple[str, ...]) -> dict[str, str]:
    """On the Partitions tab: find ``partition`` by name, select it; the metadata values it shows."""
    search = (By.CSS_SELECTOR, "input[placeholder^='Filter by name']")
    # clear() does not reach React's state: select what is typed and type over it, until it reads right
    until(driver, f"the partition filter to read {partition}", partial(_typed, locator=search, text=partition))
    click(driver, (By.XPATH, f"//*[@title='{partition}']"))
    # the detail panel shows the selected partition once its window (our metadata) starts there
    window = (By.XPATH, "//tr[td[1][normalize-space()='datacoolie/window']]/td[2]")
    until(driver, f"partition {partition}'s details", ec.text_to_be_present_in_element(window, f"[{partition}-01"))
    cells = {key: (By.XPATH, f"//tr[td[1][normalize-space()='{key}']]/td[2]") for key in keys}
    return {key: until(driver, f"{key} of {partition}", partial(_text, locator=cell)) for key, cell in cells.items()}


def _typed(driver: WebDriver, locator: tuple[str, str], text: str) -> bool:
    field = driver.find_element(*locator)
    if field.get_attribute("value") != text:
        field.send_keys(Keys.CONTROL, "a")
        field.send_keys(Keys.BACKSPACE)
        field.send_keys(text)
    return field.get_attribute("value") == text


def _text(driver: WebDriver, locator: tuple[str, str]) -> str:
    return driver.find_element(*locator).text


METADATA_ROW = "//table[thead/tr/td[normalize-space()='Key']]//tr[td[1][normalize-space()='{key}']]/td[3]"
COLUMN_ROWS = "//table[thead/tr/td[normalize-space()='Column name']]/tbody/tr"


def asset_overview(driver: WebDriver, key: str, metadata: tuple[str, ...]) -> dict[str, object]:
    """Catalog → the asset's Overview, as a user reads it once its latest materialization shows:
    ``status`` (the text beside "Latest materialization"), ``row_count``, the ``metadata`` values
    asked for (``None``: not shown), and ``columns`` (``{name: type}`` of the Columns table)."""
    _open_asset(driver, key)
    latest = (By.XPATH, "//*[normalize-space()='Latest materialization']/following-sibling::*[1]")
    status = until(driver, f"the latest materialization of {key}", partial(_text, locator=latest))
    read: dict[str, object] = {"status": status}
    count = (By.XPATH, "//div[span[normalize-space()='Row count']]/div")
    read["row_count"] = until(driver, f"the row count of {key}", partial(_text, locator=count))
    values: dict[str, str | None] = {}
    for name in metadata:
        found = driver.find_elements(By.XPATH, METADATA_ROW.format(key=name))
        values[name] = found[0].text if found else None
    read["metadata"] = values
    rows = until(driver, f"the Columns table of {key}", lambda d: d.find_elements(By.XPATH, COLUMN_ROWS))
    read["columns"] = {
        r.find_element(By.XPATH, "td[1]//span").text: r.find_element(By.XPATH, "td[2]").text for r in rows
    }
    read["page"] = driver.find_element(By.TAG_NAME, "body").text
    return read


def metadata_value(driver: WebDriver, key: str, expected: str) -> str:
    """On an asset's Overview: the latest value of metadata ``key`` once it reads ``expected`` (live update)."""
    cell = (By.XPATH, METADATA_ROW.format(key=key))
    until(driver, f"{key} to read {expected!r}", ec.text_to_be_present_in_element(cell, expected))
    return _text(driver, cell)
