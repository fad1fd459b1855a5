"""What a user does in the Dagster UI, as explicit waits on what the page shows.

Dagster's UI has few ``data-testid``s: the selectors are visible text (button labels, toasts),
aria labels of icons and ``title`` attributes, checked against page-source dumps of Dagster 1.13.27.
Every step waits on an element or a URL (``WebDriverWait``); nothing sleeps.
"""

from __future__ import annotations

import re
from urllib.parse import unquote, urlparse

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

TIMEOUT = 60  # a loaded machine renders slowly; a step that never comes fails after this
SIDEBAR_ROW = "//div[contains(@class, 'AssetSidebarNode_itemContainer')]"
GROUP_ICON = ".//*[@aria-label='asset_group']"


def wait(driver: WebDriver, timeout: float = TIMEOUT) -> WebDriverWait[WebDriver]:
    return WebDriverWait(driver, timeout)


def button(label: str, *, starts: bool = False) -> tuple[str, str]:
    """A button by its visible label (``starts``: ``Materialize…`` matches ``Materialize``)."""
    text = f"starts-with(normalize-space(), '{label}')" if starts else f"normalize-space()='{label}'"
    return By.XPATH, f"//button[.//span[{text}]]"


def skip_community_dialog(driver: WebDriver) -> None:
    """Dagster asks a fresh instance once to join its community (a dialog over every page): Skip."""
    wait(driver).until(ec.element_to_be_clickable(button("Skip"))).click()
    wait(driver).until(ec.invisibility_of_element_located(button("Skip")))


def lineage_tables(driver: WebDriver, base_url: str) -> dict[str, set[str]]:
    """Open Lineage, unfold every group in the sidebar, select each asset; ``{group: {asset key}}``.

    The sidebar shows only the last part of a key (``orders`` twice), so each asset is selected
    and its full key read from the URL the graph navigates to (``/asset-groups/<key>``).
    """
    driver.find_element(By.XPATH, "//a[.//*[normalize-space()='Lineage']]").click()
    wait(driver).until(ec.url_contains("/asset-groups"))
    groups = _group_names(driver)
    for group in groups:
        _unfold(driver, group)
    found: dict[str, set[str]] = {}
    group = ""
    for index in range(len(_rows(driver))):
        row = _rows(driver)[index]  # the tree re-renders on every selection: find it afresh
        name = row.find_element(By.XPATH, ".//*[@title]").get_attribute("title") or ""
        if row.find_elements(By.XPATH, GROUP_ICON):
            group = name
            continue
        found.setdefault(group, set()).add(_select(driver, row))
    return found


def _rows(driver: WebDriver) -> list[WebElement]:
    return driver.find_elements(By.XPATH, SIDEBAR_ROW)


def _group_names(driver: WebDriver) -> list[str]:
    wait(driver).until(ec.presence_of_element_located((By.XPATH, f"{SIDEBAR_ROW}[{GROUP_ICON}]")))
    rows = driver.find_elements(By.XPATH, f"{SIDEBAR_ROW}[{GROUP_ICON}]")
    return [r.find_element(By.XPATH, ".//*[@title]").get_attribute("title") or "" for r in rows]


def _unfold(driver: WebDriver, group: str) -> None:
    before = len(_rows(driver))
    row = driver.find_element(By.XPATH, f"{SIDEBAR_ROW}[.//*[@title='{group}']]")
    row.find_element(By.XPATH, "./button").click()  # the disclosure arrow
    wait(driver).until(lambda d: len(_rows(d)) > before)


def _select(driver: WebDriver, row: WebElement) -> str:
    """Click an asset in the sidebar; its key, once the graph shows it (``a/b/c``)."""
    before = driver.current_url
    row.find_element(By.XPATH, ".//*[@title]").click()
    wait(driver).until(lambda d: d.current_url != before and "/asset-groups/" in urlparse(d.current_url).path)
    return unquote(urlparse(driver.current_url).path).split("/asset-groups/", 1)[1]


def materialize_unpartitioned(driver: WebDriver, base_url: str, key: str) -> str:
    """Asset page → Materialize; the id prefix of the run the toast announces."""
    _open_asset(driver, base_url, key)
    wait(driver).until(ec.element_to_be_clickable(button("Materialize"))).click()
    toast = wait(driver).until(ec.visibility_of_element_located((By.XPATH, "//*[starts-with(text(), 'Launched run')]")))
    return _last_word(toast)


def backfill_range(driver: WebDriver, base_url: str, key: str, first: str, last: str) -> str:
    """Asset page → Materialize… → a range of partitions → Launch backfill; the backfill id."""
    _open_asset(driver, base_url, key)
    wait(driver).until(ec.element_to_be_clickable(button("Materialize", starts=True))).click()
    dialog = wait(driver).until(ec.visibility_of_element_located((By.CSS_SELECTOR, "[role='dialog']")))
    # the partition selector: its text box takes the range syntax its placeholder shows
    selector = dialog.find_element(By.CSS_SELECTOR, "input[placeholder^='ex: ']")
    selector.send_keys(f"[{first}...{last}]", Keys.ENTER)
    wait(driver).until(ec.text_to_be_present_in_element((By.CSS_SELECTOR, "[role='dialog']"), "2 partitions"))
    wait(driver).until(ec.element_to_be_clickable(button("Launch backfill"))).click()
    toast = wait(driver).until(
        ec.visibility_of_element_located((By.XPATH, "//*[starts-with(text(), 'Created backfill')]"))
    )
    return _last_word(toast)


def _open_asset(driver: WebDriver, base_url: str, key: str) -> None:
    driver.get(f"{base_url}/assets/{key}")
    # the breadcrumbs fold a long key's middle into "…": wait on its last part, as a user reads it
    last = key.rsplit("/", 1)[-1]
    wait(driver).until(ec.presence_of_element_located((By.XPATH, f"//ul[li//*[@title='Assets']]/li[last()]//*[@title='{last}']")))


def _last_word(element: WebElement) -> str:
    """``Launched run <span>4237346d</span>`` → ``4237346d``."""
    text = element.text
    match = re.search(r"(?:Launched run|Created backfill)\s+(\S+)", text)
    assert match, f"no id in the toast {text!r}"
    return match.group(1)


def wait_materialized(driver: WebDriver) -> None:
    """The asset page updates live: its "Never materialized" goes once the run's event lands."""
    never = (By.XPATH, "//*[normalize-space()='Never materialized']")
    wait(driver).until(ec.invisibility_of_element_located(never))


def open_partitions(driver: WebDriver, base_url: str, key: str, count: int) -> None:
    """The asset's Partitions tab, once it shows ``count`` partitions materialized."""
    _open_asset(driver, base_url, key)
    driver.find_element(By.XPATH, "//a[normalize-space()='Partitions'] | //button[normalize-space()='Partitions']").click()
    wait(driver).until(ec.url_contains("view=partitions"))
